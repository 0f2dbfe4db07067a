// Connections: an owner or admin registers an OAuth 2.0 provider; a member connects an
// account through it (authorization code with PKCE and a one-use state; the browser goes to
// the provider and back to /api/connections/callback); the tokens are sealed under the master
// key, refreshed before they expire (a refresh that fails marks the connection expired, and
// says why), revocable, and granted like secrets (organisation, guild, agent). Only the server
// reads a token, when a tool that names the connection calls out (net/bearer.ts).
import { createHash } from "node:crypto";
import { and, asc, eq, inArray, or } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { z } from "zod";
import type {
  Connection,
  ConnectionCreateRequest,
  ConnectionProvider,
  ConnectionProviderCreateRequest,
} from "../contract/connections.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { GuardedFetch } from "../net/connector.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { authorizeUrl, configOf, exchange, pkce, refresh, revokeAt, whyOf, type Tokens } from "./oauth.js";

type Grant = { scope: "org" | "guild" | "agent"; id: string };
type ProviderRow = typeof schema.connectionProviders.$inferSelect;
type ConnectionRow = typeof schema.connections.$inferSelect;

/** How long the browser may take at the provider before the pending connection's state is refused. */
const PENDING_MS = 10 * 60_000;

/** The master key's seal, and the server log's redaction (Secrets.sealer). */
export interface Sealer {
  seal(id: string, v: Buffer): string;
  open(id: string, sealed: string): Buffer;
  /** Redacts values from the server's log as secret values are (a connection's tokens). */
  hideInLog?(key: string, values: string[]): void;
}

interface ConnectionsOptions {
  db: Db;
  access: Access;
  sealer: Sealer;
  /** The guarded connector: every request to a provider goes through it. */
  fetch: GuardedFetch;
  /** How long before its expiry an access token is refreshed (default 60 s). */
  refreshAheadMs?: number;
}

/** A connection's token could not be had (connection.unusable): the tool's answer says why. */
const unusable = (why: string) => new WarrenError("connection.unusable", why);

/** Where the provider sends the browser back, on this server's origin. */
const callbackOf = (base: string) => `${base.replace(/\/+$/, "")}/api/connections/callback`;

const hash = (s: string) => createHash("sha256").update(s).digest("hex");
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export class Connections {
  readonly #o: ConnectionsOptions;
  /** Per connection: the refresh going on (one at a time, whoever asks). */
  readonly #refreshing = new Map<string, Promise<string>>();

  constructor(o: ConnectionsOptions) {
    this.#o = o;
  }

  get #db() {
    return this.#o.db;
  }

  // ---- providers

  async createProvider(
    who: Identity,
    body: z.output<typeof ConnectionProviderCreateRequest>,
  ): Promise<z.input<typeof ConnectionProvider>> {
    await this.#o.access.require(body.org_id, who, "manage", "register a connection provider");
    const id = newId("cnp");
    const [row] = await this.#db
      .insert(schema.connectionProviders)
      .values({
        id,
        orgId: body.org_id,
        name: body.name,
        issuer: body.issuer ?? null,
        authorizationUrl: body.authorization_url,
        tokenUrl: body.token_url,
        revocationUrl: body.revocation_url ?? null,
        clientId: body.client_id,
        sealedClientSecret: body.client_secret
          ? this.#o.sealer.seal(id, Buffer.from(body.client_secret, "utf8"))
          : null,
        scopes: body.scopes,
      })
      .returning();
    return providerView(row!);
  }

  async listProviders(who: Identity, orgId?: string): Promise<z.input<typeof ConnectionProvider>[]> {
    const orgs = await this.#o.access.visibleOrgIds(who, orgId);
    if (orgs.length === 0) return [];
    const rows = await this.#db
      .select()
      .from(schema.connectionProviders)
      .where(inArray(schema.connectionProviders.orgId, orgs))
      .orderBy(asc(schema.connectionProviders.name));
    return rows.map(providerView);
  }

  async deleteProvider(who: Identity, id: string): Promise<void> {
    const p = await this.#provider(id);
    await this.#o.access.require(p.orgId, who, "manage", "remove a connection provider");
    await this.#db.delete(schema.connectionProviders).where(eq(schema.connectionProviders.id, id));
  }

  async #provider(id: string): Promise<ProviderRow> {
    const [p] = await this.#db
      .select()
      .from(schema.connectionProviders)
      .where(eq(schema.connectionProviders.id, id));
    if (!p) throw new WarrenError("not_found", `no connection provider ${id}`);
    return p;
  }

  #config(p: ProviderRow) {
    return configOf(
      {
        ...p,
        clientSecret: p.sealedClientSecret
          ? this.#o.sealer.open(p.id, p.sealedClientSecret).toString("utf8")
          : null,
      },
      this.#o.fetch,
    );
  }

  // ---- connecting an account

  /** Starts the flow: a pending connection and the provider's URL for the member's browser. */
  async start(
    who: Identity,
    body: z.output<typeof ConnectionCreateRequest>,
    base: string,
  ): Promise<{ connection: z.input<typeof Connection>; authorize_url: string }> {
    const p = await this.#provider(body.provider_id);
    await this.#o.access.require(p.orgId, who, "write", "connect an account");
    const grants = await this.#checkGrants(p.orgId, body.grants ?? []);
    const [taken] = await this.#db
      .select({ id: schema.connections.id, status: schema.connections.status })
      .from(schema.connections)
      .where(and(eq(schema.connections.orgId, p.orgId), eq(schema.connections.name, body.name)));
    if (taken && taken.status !== "revoked")
      throw new WarrenError("request.invalid", `body.name: the organisation has a connection ${body.name}`);
    const id = newId("cnx");
    const state = pkce.state();
    const verifier = pkce.verifier();
    await this.#db.transaction(async (tx) => {
      if (taken) await tx.delete(schema.connections).where(eq(schema.connections.id, taken.id));
      await tx.insert(schema.connections).values({
        id,
        orgId: p.orgId,
        providerId: p.id,
        name: body.name,
        createdBy: who.userId,
        status: "pending",
        stateHash: hash(state),
        sealedVerifier: this.#o.sealer.seal(`${id}:verifier`, Buffer.from(verifier, "utf8")),
        scopes: p.scopes,
      });
      if (grants.length > 0)
        await tx
          .insert(schema.connectionGrants)
          .values(grants.map((g) => ({ connectionId: id, scope: g.scope, targetId: g.id })));
    });
    const url = authorizeUrl(this.#config(p), {
      redirectUri: callbackOf(base),
      scopes: p.scopes,
      state,
      challenge: await pkce.challenge(verifier),
    });
    return { connection: await this.#view(await this.#row(id)), authorize_url: url };
  }

  /**
   * The browser back from the provider: the state names one pending connection (once; a state
   * used, unknown or older than ten minutes is refused), and the code is exchanged with its
   * PKCE verifier. Answers the connection, now active.
   */
  async callback(
    who: Identity,
    query: Record<string, string | undefined>,
    base: string,
  ): Promise<z.input<typeof Connection>> {
    const state = query.state;
    if (!state) throw new WarrenError("connection.refused", "the provider's answer has no state");
    // one use: the state is cleared by whoever takes it first
    const [row] = await this.#db
      .update(schema.connections)
      .set({ stateHash: null })
      .where(and(eq(schema.connections.stateHash, hash(state)), eq(schema.connections.status, "pending")))
      .returning();
    if (!row)
      throw new WarrenError(
        "connection.refused",
        "the state is unknown or was used already: start connecting again",
      );
    if (row.createdBy !== who.userId) {
      await this.#fail(row.id, `${who.email} came back from the provider, not the member who started`);
      throw new WarrenError("connection.refused", "this connection was started by another member");
    }
    if (Date.now() - row.createdAt.getTime() > PENDING_MS) {
      await this.#fail(row.id, "the sign-in at the provider took longer than ten minutes");
      throw new WarrenError("connection.refused", "the connection took too long: start connecting again");
    }
    if (query.error) {
      const why = `the provider said ${query.error}${query.error_description ? `: ${query.error_description}` : ""}`;
      await this.#fail(row.id, why);
      throw new WarrenError("connection.refused", why);
    }
    const p = await this.#provider(row.providerId);
    const verifier = this.#o.sealer.open(`${row.id}:verifier`, row.sealedVerifier!).toString("utf8");
    const url = new URL(callbackOf(base));
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
    // a provider with no issuer registered is not checked against one it names
    if (!p.issuer) url.searchParams.delete("iss");
    let tokens: Tokens;
    try {
      tokens = await exchange(this.#config(p), url, { state, verifier });
    } catch (err) {
      const why = `the code exchange failed: ${whyOf(err)}`;
      await this.#fail(row.id, why);
      throw new WarrenError("connection.refused", why);
    }
    await this.#store(row.id, tokens, { status: "active", sealedVerifier: null });
    return this.#view(await this.#row(row.id));
  }

  async #fail(id: string, why: string): Promise<void> {
    await this.#db
      .update(schema.connections)
      .set({ status: "expired", statusReason: why, stateHash: null, sealedVerifier: null })
      .where(eq(schema.connections.id, id));
  }

  async #store(id: string, tokens: Tokens, extra: Partial<ConnectionRow> = {}): Promise<void> {
    this.#hide(id, tokens);
    await this.#db
      .update(schema.connections)
      .set({
        ...extra,
        sealedTokens: this.#o.sealer.seal(`${id}:tokens`, Buffer.from(JSON.stringify(tokens), "utf8")),
        expiresAt: tokens.expires_at !== undefined ? new Date(tokens.expires_at * 1000) : null,
        ...(tokens.scope ? { scopes: tokens.scope.split(" ").filter(Boolean) } : {}),
        refreshedAt: new Date(),
      })
      .where(eq(schema.connections.id, id));
  }

  #tokens(row: ConnectionRow): Tokens {
    const t = JSON.parse(
      this.#o.sealer.open(`${row.id}:tokens`, row.sealedTokens!).toString("utf8"),
    ) as Tokens;
    return this.#hide(row.id, t);
  }

  /** A token the server holds is redacted from its log, as a secret value is. */
  #hide(id: string, t: Tokens): Tokens {
    this.#o.sealer.hideInLog?.(id, [t.access_token, ...(t.refresh_token ? [t.refresh_token] : [])]);
    return t;
  }

  // ---- reading, granting, revoking

  async list(who: Identity, orgId?: string): Promise<z.input<typeof Connection>[]> {
    const orgs = await this.#o.access.visibleOrgIds(who, orgId);
    if (orgs.length === 0) return [];
    const rows = await this.#db
      .select()
      .from(schema.connections)
      .where(inArray(schema.connections.orgId, orgs))
      .orderBy(asc(schema.connections.name));
    return Promise.all(rows.map((r) => this.#view(r)));
  }

  async get(who: Identity, id: string): Promise<z.input<typeof Connection>> {
    const row = await this.#row(id);
    await this.#o.access.require(row.orgId, who, "read", "see this connection");
    return this.#view(row);
  }

  async setGrants(who: Identity, id: string, grants: Grant[]): Promise<z.input<typeof Connection>> {
    const row = await this.#row(id);
    await this.#o.access.require(row.orgId, who, "write", "grant a connection");
    const checked = await this.#checkGrants(row.orgId, grants);
    await this.#db.transaction(async (tx) => {
      await tx.delete(schema.connectionGrants).where(eq(schema.connectionGrants.connectionId, id));
      if (checked.length > 0)
        await tx
          .insert(schema.connectionGrants)
          .values(checked.map((g) => ({ connectionId: id, scope: g.scope, targetId: g.id })));
    });
    return this.#view(await this.#row(id));
  }

  /** Revokes a connection: its tokens are forgotten (and revoked at the provider, where it can). */
  async revoke(who: Identity, id: string): Promise<z.input<typeof Connection>> {
    const row = await this.#row(id);
    await this.#o.access.require(row.orgId, who, "write", "revoke a connection");
    if (row.sealedTokens) {
      const p = await this.#provider(row.providerId);
      await revokeAt(this.#config(p), this.#tokens(row)).catch(() => undefined);
    }
    await this.#db
      .update(schema.connections)
      .set({
        status: "revoked",
        statusReason: `revoked by ${who.email} at ${new Date().toISOString()}`,
        sealedTokens: null,
        stateHash: null,
        sealedVerifier: null,
        expiresAt: null,
      })
      .where(eq(schema.connections.id, id));
    return this.#view(await this.#row(id));
  }

  async #row(id: string): Promise<ConnectionRow> {
    const [row] = await this.#db.select().from(schema.connections).where(eq(schema.connections.id, id));
    if (!row) throw new WarrenError("not_found", `no connection ${id}`);
    return row;
  }

  async #view(row: ConnectionRow): Promise<z.input<typeof Connection>> {
    const grants = await this.#db
      .select()
      .from(schema.connectionGrants)
      .where(eq(schema.connectionGrants.connectionId, row.id));
    const [p] = await this.#db
      .select({ name: schema.connectionProviders.name })
      .from(schema.connectionProviders)
      .where(eq(schema.connectionProviders.id, row.providerId));
    const [by] = row.createdBy
      ? await this.#db
          .select({ email: schema.users.email })
          .from(schema.users)
          .where(eq(schema.users.id, row.createdBy))
      : [];
    const account = by ? `${by.email}'s ${p?.name ?? ""} account` : `this ${p?.name ?? ""} account`;
    const reach = grants.map((g) =>
      g.scope === "org"
        ? "every agent of the organisation"
        : g.scope === "guild"
          ? `every agent of guild ${g.targetId}`
          : `agent ${g.targetId}`,
    );
    return {
      id: row.id,
      org_id: row.orgId,
      provider_id: row.providerId,
      provider: p?.name ?? "",
      name: row.name,
      status: row.status,
      status_reason: row.statusReason,
      connected_by: by?.email ?? null,
      scopes: row.scopes,
      expires_at: iso(row.expiresAt),
      refreshed_at: iso(row.refreshedAt),
      grants: grants.map((g) => ({ scope: g.scope, id: g.targetId })),
      shared: reach.length > 0 ? `${reach.join(", ")} acts as ${account}` : null,
      created_at: row.createdAt.toISOString(),
    };
  }

  /** Every grant must name the connection's organisation, or a guild or agent of it. */
  async #checkGrants(orgId: string, grants: Grant[]): Promise<Grant[]> {
    const seen = new Map<string, Grant>();
    for (const [i, g] of grants.entries()) {
      const where = `body.grants[${i}].id`;
      const table = g.scope === "guild" ? schema.guilds : g.scope === "agent" ? schema.agents : null;
      if (g.scope === "org" && g.id !== orgId)
        throw new WarrenError(
          "request.invalid",
          `${where}: an org grant names the connection's own organisation`,
        );
      if (table) {
        const [row] = await this.#db.select({ orgId: table.orgId }).from(table).where(eq(table.id, g.id));
        if (row?.orgId !== orgId)
          throw new WarrenError("request.invalid", `${where}: no ${g.scope} ${g.id} in this organisation`);
      }
      seen.set(`${g.scope}:${g.id}`, g);
    }
    return [...seen.values()];
  }

  // ---- the server's use of a token

  /**
   * The access token of the connection `name` for an agent it is granted to (its organisation,
   * one of its guilds, or itself), refreshed first when it expires within the refresh margin.
   * connection.unusable says why there is none (not granted, revoked, expired).
   */
  async tokenFor(agent: { id: string; orgId: string }, name: string): Promise<string> {
    const guilds = this.#db
      .select({ id: schema.guildAgents.guildId })
      .from(schema.guildAgents)
      .where(eq(schema.guildAgents.agentId, agent.id));
    const g = schema.connectionGrants;
    const [row] = await this.#db
      .selectDistinct({ c: schema.connections })
      .from(schema.connections)
      .innerJoin(g, eq(g.connectionId, schema.connections.id))
      .where(
        and(
          eq(schema.connections.orgId, agent.orgId),
          eq(schema.connections.name, name),
          or(
            and(eq(g.scope, "org"), eq(g.targetId, agent.orgId)),
            and(eq(g.scope, "agent"), eq(g.targetId, agent.id)),
            and(eq(g.scope, "guild"), inArray(g.targetId, guilds)),
          ),
        ),
      );
    const c = row?.c;
    if (!c) throw unusable(`the connection ${name} is not granted to this agent`);
    if (c.status === "revoked") throw unusable(`the connection ${name} was ${c.statusReason ?? "revoked"}`);
    if (c.status === "expired")
      throw unusable(
        `the connection ${name} expired: ${c.statusReason ?? "its token expired"}; connect it again`,
      );
    if (c.status !== "active" || !c.sealedTokens)
      throw unusable(`the connection ${name} is not connected yet`);
    const ahead = this.#o.refreshAheadMs ?? 60_000;
    if (c.expiresAt && c.expiresAt.getTime() - Date.now() < ahead) {
      let going = this.#refreshing.get(c.id);
      if (!going) {
        going = this.#refresh(c).finally(() => this.#refreshing.delete(c.id));
        this.#refreshing.set(c.id, going);
      }
      return going;
    }
    return this.#tokens(c).access_token;
  }

  async #refresh(c: ConnectionRow): Promise<string> {
    const old = this.#tokens(c);
    const p = await this.#provider(c.providerId);
    let fresh: Tokens;
    try {
      fresh = await refresh(this.#config(p), old);
    } catch (err) {
      const why = `the refresh at ${new Date().toISOString()} failed: ${whyOf(err)}`;
      await this.#db
        .update(schema.connections)
        .set({ status: "expired", statusReason: why, sealedTokens: null })
        .where(eq(schema.connections.id, c.id));
      throw unusable(`the connection ${c.name} expired: ${why}; connect it again`);
    }
    await this.#store(c.id, fresh);
    return fresh.access_token;
  }
}

function providerView(r: ProviderRow): z.input<typeof ConnectionProvider> {
  return {
    id: r.id,
    org_id: r.orgId,
    name: r.name,
    issuer: r.issuer,
    authorization_url: r.authorizationUrl,
    token_url: r.tokenUrl,
    revocation_url: r.revocationUrl,
    client_id: r.clientId,
    has_client_secret: r.sealedClientSecret !== null,
    scopes: r.scopes,
    created_at: r.createdAt.toISOString(),
  };
}
