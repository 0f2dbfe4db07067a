ALTER TABLE "approvals" ADD COLUMN "deciders" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
-- The role ladder: an editor who held areas could change files in them and talk, nothing
-- more; that seat is now the writer's (editors author agents). Each such member becomes a
-- writer with the same rights, and the change is a revision of their membership.
INSERT INTO "member_revisions" ("org_id", "user_id", "revision", "email", "role", "areas", "by")
SELECT m."org_id", m."user_id",
  COALESCE((SELECT max(r."revision") FROM "member_revisions" r WHERE r."org_id" = m."org_id" AND r."user_id" = m."user_id"), 0) + 1,
  u."email", 'writer',
  (SELECT jsonb_agg(a."area" ORDER BY a."area") FROM "member_areas" a WHERE a."org_id" = m."org_id" AND a."user_id" = m."user_id"),
  'warren (role ladder: an editor holding areas is a writer)'
FROM "memberships" m JOIN "users" u ON u."id" = m."user_id"
WHERE m."role" = 'editor'
  AND EXISTS (SELECT 1 FROM "member_areas" a WHERE a."org_id" = m."org_id" AND a."user_id" = m."user_id");
--> statement-breakpoint
UPDATE "memberships" SET "role" = 'writer'
WHERE "role" = 'editor'
  AND EXISTS (SELECT 1 FROM "member_areas" a WHERE a."org_id" = "memberships"."org_id" AND a."user_id" = "memberships"."user_id");
