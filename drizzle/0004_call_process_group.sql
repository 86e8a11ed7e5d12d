ALTER TABLE "tool_calls" ADD COLUMN "pgid" integer;--> statement-breakpoint
ALTER TABLE "tool_calls" ADD COLUMN "process_stamp" text;