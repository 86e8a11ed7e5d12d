CREATE TABLE "workspace_claims" (
	"path" text PRIMARY KEY NOT NULL,
	"principal" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
