// GitHub Apps an owner or admin registered (the private key sealed under the master key, never
// answered) and the installation each agent is bound to; installation tokens are minted by
// the server and written to the agent's runtime folder only (never stored here).
import { pgTable, text } from "drizzle-orm/pg-core";
import { created } from "./columns.js";
import { agents, orgs } from "./schema.js";

export const githubApps = pgTable("github_apps", {
  id: text("id").primaryKey(),
  orgId: text("org_id")
    .notNull()
    .references(() => orgs.id, { onDelete: "cascade" }),
  name: text("name").notNull(),
  /** The App's id (the JWT's `iss`). */
  appId: text("app_id").notNull(),
  /** The App's private key (PEM), sealed under the master key (the row's id as associated data). */
  sealedPrivateKey: text("sealed_private_key").notNull(),
  /** The REST API's base: https://api.github.com, or a GitHub Enterprise server's. */
  apiUrl: text("api_url").notNull(),
  /** Where git reaches the repositories (the credential helper's host): https://github.com by default. */
  gitUrl: text("git_url").notNull(),
  createdAt: created(),
});

/** An agent's installation: the App and the installation id its tokens are minted for. */
export const githubInstallations = pgTable("github_installations", {
  agentId: text("agent_id")
    .primaryKey()
    .references(() => agents.id, { onDelete: "cascade" }),
  appId: text("app_id")
    .notNull()
    .references(() => githubApps.id, { onDelete: "cascade" }),
  installationId: text("installation_id").notNull(),
  createdAt: created(),
});
