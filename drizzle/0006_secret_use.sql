ALTER TABLE "secrets" ADD COLUMN "use" text DEFAULT 'env' NOT NULL;--> statement-breakpoint
ALTER TABLE "secrets" ADD CONSTRAINT "secrets_use" CHECK ("secrets"."use" IN ('env', 'model'));