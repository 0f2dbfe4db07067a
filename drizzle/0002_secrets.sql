CREATE TABLE "secret_grants" (
	"secret_id" text NOT NULL,
	"scope" text NOT NULL,
	"target_id" text NOT NULL,
	CONSTRAINT "secret_grants_secret_id_scope_target_id_pk" PRIMARY KEY("secret_id","scope","target_id")
);
--> statement-breakpoint
CREATE TABLE "secrets" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"sealed" text,
	"alias_of" text,
	"stored_by_agent" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "secrets_value_or_alias" CHECK (("secrets"."sealed" IS NULL) <> ("secrets"."alias_of" IS NULL))
);
--> statement-breakpoint
ALTER TABLE "secret_grants" ADD CONSTRAINT "secret_grants_secret_id_secrets_id_fk" FOREIGN KEY ("secret_id") REFERENCES "public"."secrets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "secrets" ADD CONSTRAINT "secrets_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "secrets" ADD CONSTRAINT "secrets_alias_of_secrets_id_fk" FOREIGN KEY ("alias_of") REFERENCES "public"."secrets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "secret_grants_target_idx" ON "secret_grants" USING btree ("scope","target_id");--> statement-breakpoint
CREATE UNIQUE INDEX "secrets_org_name_uq" ON "secrets" USING btree ("org_id","name");--> statement-breakpoint
CREATE INDEX "secrets_alias_idx" ON "secrets" USING btree ("alias_of");