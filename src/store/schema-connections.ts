// Connections (accounts connected once through OAuth 2.0, their tokens sealed under the master
// key like a secret's value, granted like secrets) and sign-in by OIDC (the app's sessions and
// the personal API tokens of members), a part of the schema re-exported by schema.ts.
import { index, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { at, created } from "./columns.js";
import { orgs, users } from "./schema.js";

/** An OAuth 2.0 provider an owner or admin registered in an organisation. */
export const connectionProviders = pgTable("connection_providers", {
  id: text("id").primaryKey(),
  orgId: text("org_id")
    .notNull()
    .references(() => orgs.id, { onDelete: "cascade" }),
  name: text("name").notNull(),
  /** The issuer its answers name (RFC 9207 `iss`, an ID token's `iss`), when it has one. */
  issuer: text("issuer"),
  authorizationUrl: text("authorization_url").notNull(),
  tokenUrl: text("token_url").notNull(),
  revocationUrl: text("revocation_url"),
  clientId: text("client_id").notNull(),
  /** The client secret, sealed under the master key (the provider's id as associated data). */
  sealedClientSecret: text("sealed_client_secret"),
  scopes: text("scopes").array().notNull().default([]),
  createdAt: created(),
});

/** An account connected through a provider: pending (the browser is at the provider), active, expired or revoked. */
export const connections = pgTable(
  "connections",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id")
      .notNull()
      .references(() => orgs.id, { onDelete: "cascade" }),
    providerId: text("provider_id")
      .notNull()
      .references(() => connectionProviders.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    createdBy: text("created_by").references(() => users.id, { onDelete: "set null" }),
    status: text("status", { enum: ["pending", "active", "expired", "revoked"] }).notNull(),
    statusReason: text("status_reason"),
    /** While pending: the hash of the `state` the browser carries back (one use). */
    stateHash: text("state_hash"),
    /** While pending: the PKCE code verifier, sealed. */
    sealedVerifier: text("sealed_verifier"),
    /** The tokens as one sealed JSON object {access_token, refresh_token}. */
    sealedTokens: text("sealed_tokens"),
    expiresAt: at("expires_at"),
    scopes: text("scopes").array().notNull().default([]),
    refreshedAt: at("refreshed_at"),
    createdAt: created(),
  },
  (t) => [index("connections_org_idx").on(t.orgId), index("connections_state_idx").on(t.stateHash)],
);

/** Who a connection reaches: its organisation, a guild or an agent (as secret grants). */
export const connectionGrants = pgTable(
  "connection_grants",
  {
    connectionId: text("connection_id")
      .notNull()
      .references(() => connections.id, { onDelete: "cascade" }),
    scope: text("scope", { enum: ["org", "guild", "agent"] }).notNull(),
    targetId: text("target_id").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.connectionId, t.scope, t.targetId] }),
    index("connection_grants_target_idx").on(t.scope, t.targetId),
  ],
);

/** A signed-in person's session of the app (AUTH_MODE=oidc): the cookie's hash, rotated. */
export const signinSessions = pgTable("signin_sessions", {
  hash: text("hash").primaryKey(),
  userId: text("user_id")
    .notNull()
    .references(() => users.id, { onDelete: "cascade" }),
  /** When this cookie value was issued (a session older than the rotation age gets a new one). */
  issuedAt: at("issued_at").notNull().defaultNow(),
  expiresAt: at("expires_at").notNull(),
  createdAt: created(),
});

/** A member's personal API token (its hash), for the CLI and other API clients. */
export const personalTokens = pgTable(
  "personal_tokens",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    hash: text("hash").notNull().unique(),
    lastUsedAt: at("last_used_at"),
    revokedAt: at("revoked_at"),
    createdAt: created(),
  },
  (t) => [index("personal_tokens_user_idx").on(t.userId)],
);
