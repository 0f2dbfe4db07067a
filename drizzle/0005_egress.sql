CREATE TABLE "egress_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"run_id" text,
	"at" timestamp with time zone NOT NULL,
	"decision" text NOT NULL,
	"reason" text NOT NULL,
	"host" text NOT NULL,
	"port" integer NOT NULL,
	"method" text,
	"path" text,
	"bytes_out" bigint NOT NULL,
	"bytes_in" bigint NOT NULL,
	"duration_ms" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "egress_events" ADD CONSTRAINT "egress_events_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "egress_events_agent_idx" ON "egress_events" USING btree ("agent_id","id");--> statement-breakpoint
CREATE INDEX "egress_events_agent_decision_idx" ON "egress_events" USING btree ("agent_id","decision","id");