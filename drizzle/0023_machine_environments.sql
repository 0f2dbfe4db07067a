CREATE TABLE "env_proposals" (
	"id" text PRIMARY KEY NOT NULL,
	"machine_id" text NOT NULL,
	"org_id" text NOT NULL,
	"agent_id" text,
	"proposed_by" text NOT NULL,
	"packages" jsonb NOT NULL,
	"npm" jsonb NOT NULL,
	"why" text NOT NULL,
	"state" text NOT NULL,
	"decided_by" text,
	"decided_at" timestamp with time zone,
	"revision" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "env_revisions" (
	"machine_id" text NOT NULL,
	"revision" integer NOT NULL,
	"packages" jsonb NOT NULL,
	"npm" jsonb NOT NULL,
	"status" text NOT NULL,
	"log" text DEFAULT '' NOT NULL,
	"proposal_id" text,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "env_revisions_machine_id_revision_pk" PRIMARY KEY("machine_id","revision")
);
--> statement-breakpoint
ALTER TABLE "machines" ADD COLUMN "image" text;--> statement-breakpoint
ALTER TABLE "machines" ADD COLUMN "gpu" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "machines" ADD COLUMN "nested_engine" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "machines" ADD COLUMN "env_revision" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "machines" ADD COLUMN "box_env_revision" integer;--> statement-breakpoint
ALTER TABLE "env_proposals" ADD CONSTRAINT "env_proposals_machine_id_machines_id_fk" FOREIGN KEY ("machine_id") REFERENCES "public"."machines"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "env_revisions" ADD CONSTRAINT "env_revisions_machine_id_machines_id_fk" FOREIGN KEY ("machine_id") REFERENCES "public"."machines"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "env_proposals_machine_idx" ON "env_proposals" USING btree ("machine_id","created_at");