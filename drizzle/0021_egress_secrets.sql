CREATE TABLE "egress_authorities" (
	"machine_id" text PRIMARY KEY NOT NULL,
	"cert" text NOT NULL,
	"sealed_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "secrets" DROP CONSTRAINT "secrets_use";--> statement-breakpoint
ALTER TABLE "egress_authorities" ADD CONSTRAINT "egress_authorities_machine_id_machines_id_fk" FOREIGN KEY ("machine_id") REFERENCES "public"."machines"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "secrets" ADD CONSTRAINT "secrets_use" CHECK ("secrets"."use" IN ('env', 'model', 'tool', 'egress'));