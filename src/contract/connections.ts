// Connections (accounts connected once through OAuth 2.0, granted like secrets) and sign-in by
// OIDC (personal API tokens): what the routes under /api/connections and /api/auth take and
// answer. No answer ever holds an account's token or a provider's client secret.
import { z } from "zod";
import { idOf, items, name } from "./common.js";
import { SecretGrant } from "./secrets.js";

const httpsOrHttp = z
  .string()
  .max(2000)
  .refine((s) => {
    try {
      const u = new URL(s);
      return u.protocol === "https:" || u.protocol === "http:";
    } catch {
      return false;
    }
  }, "must be an http or https URL");

const scope = z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/, "must be an OAuth scope token");

/** A connection's name, which http and MCP tools name (`connection: <name>`). */
export const connectionName = z
  .string()
  .regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "must be lowercase letters, digits, _ and - (at most 64), starting with a letter",
  );

export const ConnectionProviderCreateRequest = z
  .object({
    org_id: idOf("org"),
    name,
    issuer: httpsOrHttp.optional().describe("the issuer the provider's answers name, when it has one"),
    authorization_url: httpsOrHttp,
    token_url: httpsOrHttp,
    revocation_url: httpsOrHttp.optional(),
    client_id: z.string().min(1).max(500),
    client_secret: z.string().min(1).max(4000).optional().describe("sealed at rest; never answered"),
    scopes: z.array(scope).max(50).default([]),
  })
  .strict()
  .meta({ id: "ConnectionProviderCreateRequest" });

export const ConnectionProvider = z
  .object({
    id: idOf("cnp"),
    org_id: idOf("org"),
    name: z.string(),
    issuer: z.string().nullable(),
    authorization_url: z.string(),
    token_url: z.string(),
    revocation_url: z.string().nullable(),
    client_id: z.string(),
    has_client_secret: z.boolean(),
    scopes: z.array(z.string()),
    created_at: z.string(),
  })
  .meta({ id: "ConnectionProvider" });
export const ConnectionProviderList = items(ConnectionProvider, "ConnectionProviderList");

export const ConnectionCreateRequest = z
  .object({
    provider_id: idOf("cnp"),
    name: connectionName,
    grants: z.array(SecretGrant).max(256).optional().describe("default none"),
  })
  .strict()
  .meta({ id: "ConnectionCreateRequest" });

const ConnectionStatus = z.enum(["pending", "active", "expired", "revoked"]);

export const Connection = z
  .object({
    id: idOf("cnx"),
    org_id: idOf("org"),
    provider_id: idOf("cnp"),
    provider: z.string().describe("the provider's name"),
    name: z.string(),
    status: ConnectionStatus,
    status_reason: z.string().nullable().describe("why it is expired or revoked"),
    connected_by: z.string().nullable().describe("the email of the member who connected it"),
    scopes: z.array(z.string()),
    expires_at: z.string().nullable().describe("when its access token expires (it is refreshed before)"),
    refreshed_at: z.string().nullable(),
    grants: z.array(SecretGrant),
    shared: z
      .string()
      .nullable()
      .describe("what its grants mean: every agent they reach acts as this one account"),
    created_at: z.string(),
  })
  .meta({ id: "Connection" });
export const ConnectionList = items(Connection, "ConnectionList");

export const ConnectionStarted = z
  .object({
    connection: Connection,
    authorize_url: z.string().describe("where the member's browser goes to sign in at the provider"),
  })
  .meta({ id: "ConnectionStarted" });

export const ConnectionGrantsRequest = z
  .object({ grants: z.array(SecretGrant).max(256).describe("replace the grants") })
  .strict()
  .meta({ id: "ConnectionGrantsRequest" });

export const ConnectionCallbackQuery = z
  .object({
    state: z.string().max(500).optional(),
    code: z.string().max(4000).optional(),
    error: z.string().max(200).optional(),
    error_description: z.string().max(2000).optional(),
    iss: z.string().max(2000).optional(),
    session_state: z.string().max(500).optional(),
    scope: z.string().max(2000).optional(),
  })
  .strict();

export const PersonalTokenCreateRequest = z
  .object({ name })
  .strict()
  .meta({ id: "PersonalTokenCreateRequest" });
export const PersonalToken = z
  .object({
    id: idOf("ptk"),
    name: z.string(),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: "PersonalToken" });
export const PersonalTokenCreated = PersonalToken.extend({
  token: z.string().describe("shown once: send it as `Authorization: Bearer <token>`"),
}).meta({ id: "PersonalTokenCreated" });
export const PersonalTokenList = items(PersonalToken, "PersonalTokenList");

export const Me = z.object({ email: z.string(), auth_mode: z.string() }).meta({ id: "Me" });
