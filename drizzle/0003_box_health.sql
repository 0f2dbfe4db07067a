CREATE TABLE "machine_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"machine_id" text NOT NULL,
	"type" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"detail" text NOT NULL,
	"data" jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "machines" ADD COLUMN "runaway_after_s" integer DEFAULT 60 NOT NULL;--> statement-breakpoint
ALTER TABLE "machine_events" ADD CONSTRAINT "machine_events_machine_id_machines_id_fk" FOREIGN KEY ("machine_id") REFERENCES "public"."machines"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "machine_events_machine_idx" ON "machine_events" USING btree ("machine_id","id");