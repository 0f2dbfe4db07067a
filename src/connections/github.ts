// GitHub Apps: an owner or admin registers an App of an organisation (its id, its private key
// sealed under the master key, its API base for GitHub Enterprise) and binds an agent to one
// of its installations. While the agent's box runs, the server keeps an installation token in
// the agent's runtime folder (/run/warren/<agent id>, ./github-tokens.ts): minted when the box
// starts (or the binding is made), refreshed before it expires, dropped with the box. The
// tokens are redacted from whatever the agent's work leaves (records), and never answered.
import { eq } from "drizzle-orm";
import { existsSync } from "node:fs";
import type { z } from "zod";
import type { Access, Identity } from "../access/index.js";
import type { BoxProvider } from "../boxes/index.js";
import type { GithubApp, GithubAppCreateRequest, GithubInstallation } from "../contract/github.js";
import type { GithubInstallationRequest } from "../contract/github.js";
import { WarrenError } from "../errors.js";
import type { EventBus } from "../events/index.js";
import { newId } from "../ids.js";
import { uidOf } from "../machines/placement.js";
import type { GuardedFetch } from "../net/connector.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import {
  appJwt,
  gitUrlOf,
  mintInstallationToken,
  removeTokenFiles,
  writeTokenFiles,
} from "./github-tokens.js";
import type { Sealer } from "./service.js";

type AppRow = typeof schema.githubApps.$inferSelect;

/** How long before its expiry a token is refreshed (GitHub's tokens last an hour). */
const REFRESH_AHEAD_MS = 5 * 60_000;
/** After a failed mint, the next try. */
const RETRY_MS = 30_000;

interface GithubOptions {
  db: Db;
  access: Access;
  /** The App's key sealed; its tokens join the server log's redaction as a connection's do. */
  sealer: Sealer;
  /** The guarded connector: the one door of the server's requests. */
  connector: GuardedFetch;
  provider: Pick<BoxProvider, "runtimeDir">;
  events: Pick<EventBus, "on">;
  logger: { warn(obj: object, msg: string): void };
}

interface Live {
  machineId: string;
  timer: NodeJS.Timeout;
  expiresAt: Date | null;
}

/** When the next refresh is due: REFRESH_AHEAD_MS before expiry, or halfway for a short-lived token. */
function refreshDelay(expiresAt: Date, now = Date.now()): number {
  const left = expiresAt.getTime() - now;
  return Math.max(500, left > 2 * REFRESH_AHEAD_MS ? left - REFRESH_AHEAD_MS : left / 2);
}

export class GithubApps {
  readonly #o: GithubOptions;
  /** Per agent with a token in its runtime folder: the next refresh. */
  readonly #live = new Map<string, Live>();
  /** Per agent: the tokens it was given (redacted from its records). */
  readonly #given = new Map<string, string[]>();

  constructor(o: GithubOptions) {
    this.#o = o;
    o.events.on("box.started", (e) => this.#machineStarted(e.machineId));
    o.events.on("box.stopped", (e) => this.#machineStopped(e.machineId));
  }

  // ---- apps

  async createApp(
    who: Identity,
    body: z.output<typeof GithubAppCreateRequest>,
  ): Promise<z.input<typeof GithubApp>> {
    await this.#o.access.require(body.org_id, who, "manage", "register a GitHub App");
    appJwt(body.app_id, body.private_key); // a key that cannot sign is refused now
    const apiUrl = (body.api_url ?? "https://api.github.com").replace(/\/+$/, "");
    const id = newId("gha");
    const [row] = await this.#o.db
      .insert(schema.githubApps)
      .values({
        id,
        orgId: body.org_id,
        name: body.name,
        appId: body.app_id,
        sealedPrivateKey: this.#o.sealer.seal(id, Buffer.from(body.private_key, "utf8")),
        apiUrl,
        gitUrl: gitUrlOf(apiUrl, body.git_url),
      })
      .returning();
    return appView(row!);
  }

  async listApps(who: Identity, orgId?: string): Promise<z.input<typeof GithubApp>[]> {
    const orgs = new Set(await this.#o.access.visibleOrgIds(who, orgId));
    const rows = await this.#o.db.select().from(schema.githubApps);
    return rows.filter((r) => orgs.has(r.orgId)).map(appView);
  }

  async deleteApp(who: Identity, id: string): Promise<void> {
    const app = await this.#app(id);
    await this.#o.access.require(app.orgId, who, "manage", "remove a GitHub App");
    const bound = await this.#o.db
      .select({ agentId: schema.githubInstallations.agentId })
      .from(schema.githubInstallations)
      .where(eq(schema.githubInstallations.appId, id));
    await this.#o.db.delete(schema.githubApps).where(eq(schema.githubApps.id, id));
    for (const b of bound) await this.#drop(b.agentId, true);
  }

  async #app(id: string): Promise<AppRow> {
    const [a] = await this.#o.db.select().from(schema.githubApps).where(eq(schema.githubApps.id, id));
    if (!a) throw new WarrenError("not_found", `no GitHub App ${id}`);
    return a;
  }

  // ---- an agent's installation

  async #agent(who: Identity, agentId: string, what: string) {
    const [a] = await this.#o.db.select().from(schema.agents).where(eq(schema.agents.id, agentId));
    if (!a) throw new WarrenError("not_found", `no agent ${agentId}`);
    await this.#o.access.require(a.orgId, who, "manage", what);
    return a;
  }

  async bind(
    who: Identity,
    agentId: string,
    body: z.output<typeof GithubInstallationRequest>,
  ): Promise<z.input<typeof GithubInstallation>> {
    const agent = await this.#agent(who, agentId, "bind an agent to a GitHub installation");
    const app = await this.#app(body.github_app_id);
    if (app.orgId !== agent.orgId)
      throw new WarrenError("request.invalid", "body.github_app_id: the App is of another organisation");
    const values = { agentId, appId: app.id, installationId: body.installation_id };
    await this.#o.db
      .insert(schema.githubInstallations)
      .values(values)
      .onConflictDoUpdate({ target: schema.githubInstallations.agentId, set: values });
    // a running box gets the token now (a refusal by GitHub is the answer)
    await this.#drop(agentId, false);
    await this.#refresh(agentId, true);
    return this.getInstallation(who, agentId);
  }

  async getInstallation(who: Identity, agentId: string): Promise<z.input<typeof GithubInstallation>> {
    await this.#agent(who, agentId, "read an agent's GitHub installation");
    const [row] = await this.#o.db
      .select()
      .from(schema.githubInstallations)
      .where(eq(schema.githubInstallations.agentId, agentId));
    if (!row) throw new WarrenError("not_found", `agent ${agentId} is bound to no GitHub installation`);
    const expires = this.#live.get(agentId)?.expiresAt ?? null;
    return {
      agent_id: agentId,
      github_app_id: row.appId,
      installation_id: row.installationId,
      token_expires_at: expires ? expires.toISOString() : null,
    };
  }

  async unbind(who: Identity, agentId: string): Promise<void> {
    await this.#agent(who, agentId, "unbind an agent from a GitHub installation");
    await this.#o.db
      .delete(schema.githubInstallations)
      .where(eq(schema.githubInstallations.agentId, agentId));
    await this.#drop(agentId, true);
  }

  // ---- tokens in runtime folders

  /** The agent's records' redaction, with every installation token it was given on top. */
  redacting(agentId: string, r: { redactText(s: string): string }): { redactText(s: string): string } {
    return {
      redactText: (s) => {
        let out = r.redactText(s);
        for (const t of this.#given.get(agentId) ?? []) out = out.split(t).join("[REDACTED]");
        return out;
      },
    };
  }

  async #machineStarted(machineId: string): Promise<void> {
    const rows = await this.#o.db
      .select({ agentId: schema.githubInstallations.agentId })
      .from(schema.githubInstallations)
      .innerJoin(schema.agents, eq(schema.agents.id, schema.githubInstallations.agentId))
      .where(eq(schema.agents.machineId, machineId));
    await Promise.all(rows.map((r) => this.#refresh(r.agentId, false)));
  }

  #machineStopped(machineId: string): void {
    for (const [agentId, live] of this.#live)
      if (live.machineId === machineId) {
        clearTimeout(live.timer);
        this.#live.delete(agentId);
      }
  }

  /** Stops the agent's refreshes; `files`: its token's files go too. */
  async #drop(agentId: string, files: boolean): Promise<void> {
    const live = this.#live.get(agentId);
    if (live) clearTimeout(live.timer);
    this.#live.delete(agentId);
    if (!files || !live) return;
    const dir = this.#o.provider.runtimeDir(live.machineId, agentId);
    if (dir) await removeTokenFiles(dir).catch(() => undefined);
  }

  /**
   * Mints the agent's token and writes it to its runtime folder when its box runs (the
   * folder is there), then schedules the next refresh. `loud`: a failure is thrown (a
   * binding's answer); else it is logged and tried again.
   */
  async #refresh(agentId: string, loud: boolean): Promise<void> {
    const [row] = await this.#o.db
      .select({ i: schema.githubInstallations, app: schema.githubApps, agent: schema.agents })
      .from(schema.githubInstallations)
      .innerJoin(schema.githubApps, eq(schema.githubApps.id, schema.githubInstallations.appId))
      .innerJoin(schema.agents, eq(schema.agents.id, schema.githubInstallations.agentId))
      .where(eq(schema.githubInstallations.agentId, agentId));
    if (!row) return void this.#drop(agentId, false);
    const machineId = row.agent.machineId;
    const dir = this.#o.provider.runtimeDir(machineId, agentId);
    if (!dir || !existsSync(dir)) return void this.#drop(agentId, false);
    const schedule = (ms: number, expiresAt: Date | null) => {
      const timer = setTimeout(() => void this.#refresh(agentId, false), ms);
      timer.unref();
      this.#live.set(agentId, { machineId, timer, expiresAt });
    };
    try {
      const minted = await mintInstallationToken(this.#o.connector, {
        apiUrl: row.app.apiUrl,
        appId: row.app.appId,
        privateKeyPem: this.#o.sealer.open(row.app.id, row.app.sealedPrivateKey).toString("utf8"),
        installationId: row.i.installationId,
      });
      this.#given.set(agentId, [...(this.#given.get(agentId) ?? []).slice(-7), minted.token]);
      this.#o.sealer.hideInLog?.(`github:${agentId}`, [minted.token]);
      await writeTokenFiles(dir, { agentId, uid: uidOf(row.agent.slot), gitUrl: row.app.gitUrl, minted });
      if (this.#live.get(agentId)?.timer) clearTimeout(this.#live.get(agentId)!.timer);
      schedule(refreshDelay(minted.expiresAt), minted.expiresAt);
    } catch (err) {
      if (loud) throw err;
      this.#o.logger.warn(
        { agentId, err: (err as Error).message },
        "a GitHub installation token was not minted",
      );
      schedule(RETRY_MS, this.#live.get(agentId)?.expiresAt ?? null);
    }
  }
}

function appView(r: AppRow): z.input<typeof GithubApp> {
  return {
    id: r.id,
    org_id: r.orgId,
    name: r.name,
    app_id: r.appId,
    api_url: r.apiUrl,
    git_url: r.gitUrl,
    created_at: r.createdAt.toISOString(),
  };
}
