CREATE TABLE "artifact_access" (
	"org_id" text NOT NULL,
	"path" text NOT NULL,
	"scope" text NOT NULL,
	"subject_id" text NOT NULL,
	"mode" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "artifact_access_org_id_path_scope_subject_id_pk" PRIMARY KEY("org_id","path","scope","subject_id")
);
--> statement-breakpoint
CREATE TABLE "artifacts" (
	"org_id" text NOT NULL,
	"path" text NOT NULL,
	"kind" text NOT NULL,
	"agent_id" text,
	"content" text NOT NULL,
	"revision" integer NOT NULL,
	"updated_by" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "artifacts_org_id_path_pk" PRIMARY KEY("org_id","path")
);
--> statement-breakpoint
CREATE TABLE "memory_revisions" (
	"org_id" text NOT NULL,
	"path" text NOT NULL,
	"revision" integer NOT NULL,
	"content" text NOT NULL,
	"by" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "memory_revisions_org_id_path_revision_pk" PRIMARY KEY("org_id","path","revision")
);
--> statement-breakpoint
ALTER TABLE "artifact_access" ADD CONSTRAINT "artifact_access_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "artifacts" ADD CONSTRAINT "artifacts_org_id_orgs_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."orgs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memory_revisions" ADD CONSTRAINT "memory_revisions_org_id_path_artifacts_org_id_path_fk" FOREIGN KEY ("org_id","path") REFERENCES "public"."artifacts"("org_id","path") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "artifacts_agent_idx" ON "artifacts" USING btree ("agent_id");