CREATE TABLE "area_revisions" (
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"revision" integer NOT NULL,
	"folders" jsonb,
	"by" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "area_revisions_org_id_name_revision_pk" PRIMARY KEY("org_id","name","revision")
);
--> statement-breakpoint
CREATE TABLE "areas" (
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"folders" jsonb NOT NULL,
	"revision" integer NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "areas_org_id_name_pk" PRIMARY KEY("org_id","name")
);
--> statement-breakpoint
CREATE TABLE "conversation_branches" (
	"conversation_id" text PRIMARY KEY NOT NULL,
	"repo" text NOT NULL,
	"branch" text NOT NULL,
	"base" text NOT NULL,
	"worktree" text,
	"landed_commit" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "member_areas" (
	"org_id" text NOT NULL,
	"user_id" text NOT NULL,
	"area" text NOT NULL,
	CONSTRAINT "member_areas_org_id_user_id_area_pk" PRIMARY KEY("org_id","user_id","area")
);
--> statement-breakpoint
ALTER TABLE "area_revisions" ADD CONSTRAINT "area_revisions_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "areas" ADD CONSTRAINT "areas_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversation_branches" ADD CONSTRAINT "conversation_branches_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "member_areas" ADD CONSTRAINT "member_areas_org_id_user_id_memberships_org_id_user_id_fk" FOREIGN KEY ("org_id","user_id") REFERENCES "public"."memberships"("org_id","user_id") ON DELETE cascade ON UPDATE no action;