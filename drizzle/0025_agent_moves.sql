CREATE TABLE "agent_moves" (
	"agent_id" text PRIMARY KEY NOT NULL,
	"from_machine" text NOT NULL,
	"from_slot" integer NOT NULL,
	"to_machine" text NOT NULL,
	"to_slot" integer NOT NULL,
	"state" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_moves" ADD CONSTRAINT "agent_moves_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;