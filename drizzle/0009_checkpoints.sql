CREATE TABLE "checkpoints" (
	"call_id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"task_id" text NOT NULL,
	"context_id" text NOT NULL,
	"workspace" text NOT NULL,
	"principal" text,
	"tool_name" text NOT NULL,
	"history_length" integer NOT NULL,
	"message_id" text,
	"files" jsonb NOT NULL,
	"restore_of" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "checkpoints_name_idx" ON "checkpoints" USING btree ("name");--> statement-breakpoint
CREATE INDEX "checkpoints_workspace_idx" ON "checkpoints" USING btree ("workspace","created_at");