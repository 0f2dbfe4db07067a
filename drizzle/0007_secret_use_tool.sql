ALTER TABLE "secrets" DROP CONSTRAINT "secrets_use";--> statement-breakpoint
ALTER TABLE "secrets" ADD CONSTRAINT "secrets_use" CHECK ("secrets"."use" IN ('env', 'model', 'tool'));