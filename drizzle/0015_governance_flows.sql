CREATE TABLE "conversation_versions" (
	"conversation_id" text PRIMARY KEY NOT NULL,
	"version" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "budget_usage" (
	"org_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"period" text NOT NULL,
	"period_start" text NOT NULL,
	"spent_tokens" bigint DEFAULT 0 NOT NULL,
	"spent_usd" double precision DEFAULT 0 NOT NULL,
	"reserved_tokens" bigint DEFAULT 0 NOT NULL,
	"reserved_usd" double precision DEFAULT 0 NOT NULL,
	CONSTRAINT "budget_usage_org_id_agent_id_period_period_start_pk" PRIMARY KEY("org_id","agent_id","period","period_start")
);
--> statement-breakpoint
CREATE TABLE "org_budgets" (
	"org_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"period" text NOT NULL,
	"max_usd" double precision,
	"max_tokens" bigint,
	"updated_by" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "org_budgets_org_id_agent_id_period_pk" PRIMARY KEY("org_id","agent_id","period")
);
--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "output_deleted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "org_guardrails" ADD COLUMN "network_deny" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "org_guardrails" ADD COLUMN "retention_days" integer;--> statement-breakpoint
ALTER TABLE "flow_instances" ADD COLUMN "workspace_mib" integer;--> statement-breakpoint
ALTER TABLE "conversation_versions" ADD CONSTRAINT "conversation_versions_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budget_usage" ADD CONSTRAINT "budget_usage_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "org_budgets" ADD CONSTRAINT "org_budgets_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;