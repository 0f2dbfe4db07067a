ALTER TABLE "flow_agents" ADD COLUMN "bundle" text;--> statement-breakpoint
ALTER TABLE "flow_instances" ADD COLUMN "revision" text;--> statement-breakpoint
ALTER TABLE "flow_instances" ADD COLUMN "input" jsonb;--> statement-breakpoint
ALTER TABLE "flows" ADD COLUMN "source" text DEFAULT 'api' NOT NULL;--> statement-breakpoint
ALTER TABLE "flows" ADD COLUMN "revision" text;--> statement-breakpoint
ALTER TABLE "flows" ADD COLUMN "contract_file" text;