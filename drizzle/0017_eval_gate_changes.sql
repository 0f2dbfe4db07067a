CREATE TABLE "agent_eval_gate_changes" (
	"agent_id" text NOT NULL,
	"revision" integer NOT NULL,
	"suite_name" text,
	"by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_eval_gate_changes_agent_id_revision_pk" PRIMARY KEY("agent_id","revision")
);
--> statement-breakpoint
ALTER TABLE "agent_eval_gate_changes" ADD CONSTRAINT "agent_eval_gate_changes_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;