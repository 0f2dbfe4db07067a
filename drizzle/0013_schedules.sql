CREATE TABLE "guild_conversations" (
	"guild_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"conversation_id" text NOT NULL,
	CONSTRAINT "guild_conversations_guild_id_agent_id_pk" PRIMARY KEY("guild_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "guild_messages" (
	"id" text PRIMARY KEY NOT NULL,
	"guild_id" text NOT NULL,
	"org_id" text NOT NULL,
	"text" text NOT NULL,
	"fan_out" boolean DEFAULT false NOT NULL,
	"author" jsonb NOT NULL,
	"status" text NOT NULL,
	"status_reason" text,
	"targets" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"dispatched_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "schedule_runs" (
	"run_id" text PRIMARY KEY NOT NULL,
	"schedule_id" text NOT NULL,
	"scheduled_for" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "schedules" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"cron" text,
	"every_s" integer,
	"timezone" text DEFAULT 'UTC' NOT NULL,
	"run" jsonb NOT NULL,
	"overlap" text NOT NULL,
	"catch_up" text NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"paused_reason" text,
	"start_at" timestamp with time zone,
	"end_at" timestamp with time zone,
	"created_by" jsonb NOT NULL,
	"last_slot_at" timestamp with time zone,
	"failures" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "schedules_one_timing" CHECK (("schedules"."cron" is null) <> ("schedules"."every_s" is null))
);
--> statement-breakpoint
ALTER TABLE "guild_conversations" ADD CONSTRAINT "guild_conversations_guild_id_guilds_id_fk" FOREIGN KEY ("guild_id") REFERENCES "public"."guilds"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "guild_conversations" ADD CONSTRAINT "guild_conversations_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "guild_conversations" ADD CONSTRAINT "guild_conversations_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "guild_messages" ADD CONSTRAINT "guild_messages_guild_id_guilds_id_fk" FOREIGN KEY ("guild_id") REFERENCES "public"."guilds"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "schedules" ADD CONSTRAINT "schedules_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "guild_messages_guild_idx" ON "guild_messages" USING btree ("guild_id","status","created_at");--> statement-breakpoint
CREATE INDEX "schedule_runs_schedule_idx" ON "schedule_runs" USING btree ("schedule_id","created_at");--> statement-breakpoint
CREATE INDEX "schedules_agent_idx" ON "schedules" USING btree ("agent_id","created_at");