CREATE TABLE "audit_log" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"task_id" text NOT NULL,
	"context_id" text NOT NULL,
	"tool_call_id" text,
	"decision" text NOT NULL,
	"principal" text,
	"option_id" text,
	"shown_hash" text,
	"detail" jsonb
);
--> statement-breakpoint
CREATE TABLE "closed_turns" (
	"task_id" text NOT NULL,
	"turn" integer NOT NULL,
	"closed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "closed_turns_task_id_turn_pk" PRIMARY KEY("task_id","turn")
);
--> statement-breakpoint
CREATE TABLE "context_history" (
	"context_id" text NOT NULL,
	"idx" integer NOT NULL,
	"content" jsonb NOT NULL,
	CONSTRAINT "context_history_context_id_idx_pk" PRIMARY KEY("context_id","idx")
);
--> statement-breakpoint
CREATE TABLE "contexts" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "events" (
	"task_id" text NOT NULL,
	"seq" integer NOT NULL,
	"payload" jsonb NOT NULL,
	"final" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "events_task_id_seq_pk" PRIMARY KEY("task_id","seq")
);
--> statement-breakpoint
CREATE TABLE "tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"context_id" text NOT NULL,
	"state" text NOT NULL,
	"principal" text,
	"task" jsonb NOT NULL,
	"last_seq" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_calls" (
	"id" text PRIMARY KEY NOT NULL,
	"task_id" text NOT NULL,
	"turn" integer NOT NULL,
	"position" integer NOT NULL,
	"tool_name" text NOT NULL,
	"model_call_id" text,
	"args" jsonb,
	"snapshot" jsonb NOT NULL,
	"phase" text NOT NULL,
	"answer" text,
	"response" jsonb,
	"shown_hash" text,
	"proposed_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"lease_owner" text,
	"lease_until" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "trust_grants" (
	"context_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"principal" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "trust_grants_context_id_tool_name_pk" PRIMARY KEY("context_id","tool_name")
);
--> statement-breakpoint
ALTER TABLE "closed_turns" ADD CONSTRAINT "closed_turns_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "context_history" ADD CONSTRAINT "context_history_context_id_contexts_id_fk" FOREIGN KEY ("context_id") REFERENCES "public"."contexts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tasks" ADD CONSTRAINT "tasks_context_id_contexts_id_fk" FOREIGN KEY ("context_id") REFERENCES "public"."contexts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_calls" ADD CONSTRAINT "tool_calls_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "trust_grants" ADD CONSTRAINT "trust_grants_context_id_contexts_id_fk" FOREIGN KEY ("context_id") REFERENCES "public"."contexts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_log_task_id_idx" ON "audit_log" USING btree ("task_id","id");--> statement-breakpoint
CREATE INDEX "audit_log_context_id_idx" ON "audit_log" USING btree ("context_id","id");--> statement-breakpoint
CREATE INDEX "tasks_context_id_idx" ON "tasks" USING btree ("context_id");--> statement-breakpoint
CREATE INDEX "tasks_state_idx" ON "tasks" USING btree ("state");--> statement-breakpoint
CREATE INDEX "tool_calls_task_turn_idx" ON "tool_calls" USING btree ("task_id","turn");--> statement-breakpoint
CREATE INDEX "tool_calls_live_phase_idx" ON "tool_calls" USING btree ("phase") WHERE phase <> 'done';