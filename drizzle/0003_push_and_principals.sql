CREATE TABLE "push_configs" (
	"task_id" text NOT NULL,
	"id" text NOT NULL,
	"url" text NOT NULL,
	"token" text,
	"auth_scheme" text,
	"auth_credentials" text,
	"wire_version" text NOT NULL,
	"principal" text,
	"delivered_seq" integer DEFAULT 0 NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_error" text,
	"dropped" integer DEFAULT 0 NOT NULL,
	"lease_owner" text,
	"lease_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "push_configs_task_id_id_pk" PRIMARY KEY("task_id","id")
);
--> statement-breakpoint
CREATE TABLE "signing_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"alg" text NOT NULL,
	"private_jwk" jsonb NOT NULL,
	"public_jwk" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "contexts" ADD COLUMN "principal" text;--> statement-breakpoint
ALTER TABLE "tool_calls" ADD COLUMN "reminded_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "push_configs" ADD CONSTRAINT "push_configs_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "push_configs_next_attempt_idx" ON "push_configs" USING btree ("next_attempt_at");