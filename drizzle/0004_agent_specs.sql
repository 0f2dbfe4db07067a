CREATE TABLE "agent_specs" (
	"agent_id" text NOT NULL,
	"version" integer NOT NULL,
	"spec" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_specs_agent_id_version_pk" PRIMARY KEY("agent_id","version")
);
--> statement-breakpoint
ALTER TABLE "agents" ADD COLUMN "spec_version" integer;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "spec_version" integer;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "usage" jsonb;--> statement-breakpoint
ALTER TABLE "agent_specs" ADD CONSTRAINT "agent_specs_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;