ALTER TABLE "events" ADD COLUMN "key" text;--> statement-breakpoint
CREATE INDEX "events_task_key_idx" ON "events" USING btree ("task_id","key") WHERE key is not null;