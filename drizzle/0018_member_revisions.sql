CREATE TABLE "member_revisions" (
	"org_id" text NOT NULL,
	"user_id" text NOT NULL,
	"revision" integer NOT NULL,
	"email" text NOT NULL,
	"role" text,
	"areas" jsonb NOT NULL,
	"by" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "member_revisions_org_id_user_id_revision_pk" PRIMARY KEY("org_id","user_id","revision")
);
--> statement-breakpoint
ALTER TABLE "member_revisions" ADD CONSTRAINT "member_revisions_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;