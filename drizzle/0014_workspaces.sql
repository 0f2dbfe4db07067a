CREATE TABLE "flow_agents" (
	"flow_id" text NOT NULL,
	"agent_id" text NOT NULL,
	CONSTRAINT "flow_agents_flow_id_agent_id_pk" PRIMARY KEY("flow_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "flow_instance_conversations" (
	"conversation_id" text PRIMARY KEY NOT NULL,
	"instance_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "flow_instance_runs" (
	"run_id" text PRIMARY KEY NOT NULL,
	"instance_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "flow_instances" (
	"id" text PRIMARY KEY NOT NULL,
	"flow_id" text NOT NULL,
	"org_id" text NOT NULL,
	"name" text,
	"status" text NOT NULL,
	"gid" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ended_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "flows" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "flow_agents" ADD CONSTRAINT "flow_agents_flow_id_flows_id_fk" FOREIGN KEY ("flow_id") REFERENCES "public"."flows"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flow_agents" ADD CONSTRAINT "flow_agents_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flow_instance_conversations" ADD CONSTRAINT "flow_instance_conversations_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flow_instance_conversations" ADD CONSTRAINT "flow_instance_conversations_instance_id_flow_instances_id_fk" FOREIGN KEY ("instance_id") REFERENCES "public"."flow_instances"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flow_instance_runs" ADD CONSTRAINT "flow_instance_runs_instance_id_flow_instances_id_fk" FOREIGN KEY ("instance_id") REFERENCES "public"."flow_instances"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flow_instances" ADD CONSTRAINT "flow_instances_flow_id_flows_id_fk" FOREIGN KEY ("flow_id") REFERENCES "public"."flows"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "flows" ADD CONSTRAINT "flows_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "flow_agents_agent_idx" ON "flow_agents" USING btree ("agent_id");--> statement-breakpoint
CREATE INDEX "flow_instance_conversations_instance_idx" ON "flow_instance_conversations" USING btree ("instance_id","created_at");--> statement-breakpoint
CREATE INDEX "flow_instance_runs_instance_idx" ON "flow_instance_runs" USING btree ("instance_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "flow_instances_gid_uq" ON "flow_instances" USING btree ("gid");--> statement-breakpoint
CREATE INDEX "flow_instances_flow_idx" ON "flow_instances" USING btree ("flow_id","created_at");--> statement-breakpoint
CREATE INDEX "flows_org_idx" ON "flows" USING btree ("org_id");