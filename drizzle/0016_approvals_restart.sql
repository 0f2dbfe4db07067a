CREATE TABLE "run_suspensions" (
	"run_id" text PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"state" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "run_suspensions" ADD CONSTRAINT "run_suspensions_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;