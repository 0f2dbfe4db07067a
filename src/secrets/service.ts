// Secrets: sealed at rest under the master key, granted to an organisation, a guild or an
// agent, resolved for a command's environment, and redacted from whatever leaves a box.
// Members read names, descriptions and grants; no route ever returns a value.
import { asc, count, eq, inArray, isNotNull, or } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Db, GrantRow, SecretRow } from "../store/index.js";
import { isUniqueViolation, schema } from "../store/index.js";
import type { Secret, SecretUse } from "../contract/types.js";
import { SECRET_VALUE_MIN_BYTES, secretHostsProblem as hostsBad } from "../contract/secrets.js";
import { open, seal } from "./crypto.js";
import { egressOf, markerOf, markerVariable, type EgressHeld } from "./markers.js";
import { Reaching } from "./reaching.js";
import { Redactor, withCaseForms } from "./redact.js";

export type Grant = { scope: "org" | "guild" | "agent"; id: string };

export interface SecretCreateInput {
  org_id: string;
  name: string;
  description?: string | undefined;
  value?: string | undefined;
  alias_of?: string | undefined;
  use?: SecretUse | undefined;
  grants?: Grant[] | undefined;
  hosts?: string[] | undefined;
}

export interface SecretUpdateInput {
  description?: string | undefined;
  grants?: Grant[] | undefined;
  /** env to tool: the one change of use (owners and admins). */
  use?: "tool" | undefined;
  hosts?: string[] | undefined;
}

/** A value the model gateway may use as a key, with the hosts it may be sent to. */
export interface ModelKey {
  use: SecretUse;
  value: string;
  /** Empty: only the official API host of the model's provider. */
  hosts: string[];
}

/** The values a tool's headers may carry: by secret name, with the use it has. */
export type ToolHeaderValues = Record<string, { use: "tool" | "env"; value: string }>;

/**
 * What reaches one command: its environment's secret variables (use env only) and the values
 * to redact (every secret that reaches the agent, model keys included).
 */
export interface ResolvedSecrets {
  env: Record<string, string>;
  redactor: Redactor;
  /**
   * Calls `fn` with each value the agent stores from its box from now on (warren-secret
   * store), so that the command's output hides it too; returns the function that stops.
   */
  follow?: (fn: (value: Buffer) => void) => () => void;
}

/** At most this many secrets stored by one agent from its box (secret.limit). */
export const STORED_PER_AGENT = 20;

/** The forms a value takes in a log line: as is, and as a JSON string's body. */
function logForms(value: string): string[] {
  const json = JSON.stringify(value).slice(1, -1);
  return json === value ? [value] : [value, json];
}

function view(row: SecretRow, grants: GrantRow[], hosts: string[]): Secret {
  return {
    id: row.id,
    org_id: row.orgId,
    name: row.name,
    description: row.description,
    use: row.use,
    alias_of: row.aliasOf,
    grants: grants.map((g) => ({ scope: g.scope, id: g.targetId })),
    hosts,
    stored_by_agent: row.storedByAgent,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export class Secrets {
  readonly #db: Db;
  readonly #access: Access;
  readonly #key: Buffer;
  /** Every value this server holds (in the forms a log line gives it), for the server's log. */
  #logForms: string[] = [];
  #logRedactor: Redactor = Redactor.empty;
  /** Per key (a connection): the last values the server opened for itself, hidden from the log too. */
  readonly #hidden = new Map<string, string[]>();
  /** Per agent: the running commands to tell of a value it stores (see ResolvedSecrets.follow). */
  readonly #followers = new Map<string, Set<(value: Buffer) => void>>();
  /** Per organisation: who wants to know when the secrets reaching its agents may have changed. */
  readonly #watchers = new Map<string, Set<() => Promise<void>>>();

  readonly #reach: Reaching;
  /** Per agent: its commands' environment and redactor, kept while what reaches it is unchanged. */
  readonly #resolved;

  constructor(db: Db, access: Access, key: Buffer) {
    this.#db = db;
    this.#access = access;
    this.#key = key;
    this.#reach = new Reaching(db, key);
    this.#resolved = this.#reach.memo<{ env: Readonly<Record<string, string>>; redactor: Redactor }>();
  }

  /** The master key's seal for the server's own keys (egress/authority.ts); hideInLog: a connection's tokens. */
  readonly sealer = {
    seal: (id: string, v: Buffer) => seal(this.#key, id, v),
    open: (id: string, sealed: string) => open(this.#key, id, sealed),
    hideInLog: (key: string, values: string[]) => {
      const had = this.#hidden.get(key) ?? [];
      if (values.every((v) => had.includes(v))) return;
      this.#hidden.set(key, [...had.filter((v) => !values.includes(v)), ...values].slice(-4));
      this.#addToLog();
    },
  };

  /** The redactor of the server's log: every value of every organisation. */
  get logRedactor(): Redactor {
    return this.#logRedactor;
  }

  /**
   * At start: opens every value (a wrong master key is found here, not at a command's start)
   * and builds the log's redactor.
   */
  async load(): Promise<number> {
    const rows = await this.#db
      .select({ id: schema.secrets.id, sealed: schema.secrets.sealed })
      .from(schema.secrets)
      .where(isNotNull(schema.secrets.sealed));
    const forms: string[] = [];
    for (const r of rows) forms.push(...logForms(open(this.#key, r.id, r.sealed!).toString("utf8")));
    this.#logForms = forms;
    this.#addToLog();
    return rows.length;
  }

  async #grantsOf(ids: string[]): Promise<Map<string, GrantRow[]>> {
    const out = new Map<string, GrantRow[]>();
    if (ids.length === 0) return out;
    const rows = await this.#db
      .select()
      .from(schema.secretGrants)
      .where(inArray(schema.secretGrants.secretId, ids))
      .orderBy(asc(schema.secretGrants.scope), asc(schema.secretGrants.targetId));
    for (const g of rows) out.set(g.secretId, [...(out.get(g.secretId) ?? []), g]);
    return out;
  }

  /** Every grant must name the secret's organisation, or a guild or agent of it. */
  async #checkGrants(orgId: string, grants: Grant[]): Promise<Grant[]> {
    const seen = new Map<string, Grant>();
    for (const [i, g] of grants.entries()) {
      const where = `body.grants[${i}].id`;
      if (g.scope === "org" && g.id !== orgId)
        throw new WarrenError(
          "request.invalid",
          `${where}: an org grant names the secret's own organisation`,
        );
      if (g.scope === "guild") {
        const [row] = await this.#db
          .select({ orgId: schema.guilds.orgId })
          .from(schema.guilds)
          .where(eq(schema.guilds.id, g.id));
        if (row?.orgId !== orgId)
          throw new WarrenError("request.invalid", `${where}: no guild ${g.id} in this organisation`);
      }
      if (g.scope === "agent") {
        const [row] = await this.#db
          .select({ orgId: schema.agents.orgId })
          .from(schema.agents)
          .where(eq(schema.agents.id, g.id));
        if (row?.orgId !== orgId)
          throw new WarrenError("request.invalid", `${where}: no agent ${g.id} in this organisation`);
      }
      seen.set(`${g.scope}:${g.id}`, g);
    }
    return [...seen.values()];
  }

  /** The hosts each row's value may be sent to: its own, or for an alias those of its secret. */
  async #hostsOf(rows: SecretRow[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    const targets = [...new Set(rows.filter((r) => r.aliasOf !== null).map((r) => r.aliasOf!))];
    const of = new Map<string, string[]>();
    if (targets.length > 0)
      for (const t of await this.#db
        .select({ id: schema.secrets.id, hosts: schema.secrets.hosts })
        .from(schema.secrets)
        .where(inArray(schema.secrets.id, targets)))
        of.set(t.id, t.hosts);
    for (const r of rows) out.set(r.id, r.aliasOf !== null ? (of.get(r.aliasOf) ?? []) : r.hosts);
    return out;
  }

  async #load(who: Identity, id: string, perm: "read" | "write"): Promise<SecretRow> {
    const [row] = await this.#db.select().from(schema.secrets).where(eq(schema.secrets.id, id));
    if (!row) throw new WarrenError("not_found", "secret was not found");
    await this.#access.require(row.orgId, who, perm, "secret");
    return row;
  }

  async create(who: Identity, input: SecretCreateInput): Promise<Secret> {
    await this.#access.require(input.org_id, who, "write", "organisation");
    const grants = await this.#checkGrants(input.org_id, input.grants ?? []);
    const id = newId("sec");
    let sealed: string | null = null;
    let use: SecretUse = input.use ?? "env";
    const bound = input.use === "model" || input.use === "egress";
    if ((input.hosts !== undefined && (!bound || input.alias_of !== undefined)) || hostsBad(input))
      throw new WarrenError(
        "request.invalid",
        `body.hosts: ${hostsBad(input) ?? "hosts are for a secret of use model or egress (an alias takes those of the secret it names)"}`,
      );
    if (input.alias_of !== undefined) {
      const [target] = await this.#db
        .select({ orgId: schema.secrets.orgId, aliasOf: schema.secrets.aliasOf, use: schema.secrets.use })
        .from(schema.secrets)
        .where(eq(schema.secrets.id, input.alias_of));
      if (target?.orgId !== input.org_id)
        throw new WarrenError("request.invalid", "body.alias_of: no such secret in this organisation");
      if (target.aliasOf !== null)
        throw new WarrenError("request.invalid", "body.alias_of: names an alias; name the secret itself");
      // an alias carries its secret's value, so it takes its use: a model key never becomes a variable
      if (input.use !== undefined && input.use !== target.use)
        throw new WarrenError(
          "request.invalid",
          `body.use: an alias takes the use of the secret it names (${target.use})`,
        );
      use = target.use;
    } else {
      sealed = seal(this.#key, id, Buffer.from(input.value ?? "", "utf8"));
    }
    try {
      await this.#db.transaction(async (tx) => {
        await tx.insert(schema.secrets).values({
          id,
          orgId: input.org_id,
          name: input.name,
          description: input.description ?? "",
          sealed,
          aliasOf: input.alias_of ?? null,
          use,
          hosts: [...new Set(input.hosts ?? [])],
        });
        if (grants.length > 0)
          await tx
            .insert(schema.secretGrants)
            .values(grants.map((g) => ({ secretId: id, scope: g.scope, targetId: g.id })));
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new WarrenError(
          "request.invalid",
          `body.name: this organisation already has a secret ${input.name}`,
        );
      throw err;
    }
    if (input.value !== undefined) this.#addToLog(input.value);
    if (grants.length > 0) await this.#changed(input.org_id);
    return this.get(who, id);
  }

  /**
   * `fn` is called (and awaited before the change is answered) each time a secret of the
   * organisation is created with grants or its grants are replaced: what reaches its agents
   * may have changed. A terminal resolves its agent's secrets again then. Answers the stop.
   */
  onChange(orgId: string, fn: () => Promise<void>): () => void {
    let set = this.#watchers.get(orgId);
    if (!set) this.#watchers.set(orgId, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.#watchers.get(orgId) === set) this.#watchers.delete(orgId);
    };
  }

  async #changed(orgId: string): Promise<void> {
    await Promise.allSettled([...(this.#watchers.get(orgId) ?? [])].map((fn) => fn()));
  }

  #addToLog(value?: string): void {
    // a new value joins the log's redactor at once; a deleted one leaves it at the next start
    if (value !== undefined) this.#logForms.push(...logForms(value));
    const hidden = [...this.#hidden.values()].flat().flatMap(logForms);
    this.#logRedactor = new Redactor([...this.#logForms, ...hidden], SECRET_VALUE_MIN_BYTES);
  }

  async get(who: Identity, id: string): Promise<Secret> {
    const row = await this.#load(who, id, "read");
    const g = await this.#grantsOf([id]);
    const h = await this.#hostsOf([row]);
    return view(row, g.get(id) ?? [], h.get(id) ?? []);
  }

  async list(who: Identity, orgId?: string): Promise<Secret[]> {
    const orgIds = await this.#access.visibleOrgIds(who, orgId);
    if (orgIds.length === 0) return [];
    const rows = await this.#db
      .select()
      .from(schema.secrets)
      .where(inArray(schema.secrets.orgId, orgIds))
      .orderBy(asc(schema.secrets.name), asc(schema.secrets.id));
    const g = await this.#grantsOf(rows.map((r) => r.id));
    const h = await this.#hostsOf(rows);
    return rows.map((r) => view(r, g.get(r.id) ?? [], h.get(r.id) ?? []));
  }

  async update(who: Identity, id: string, input: SecretUpdateInput): Promise<Secret> {
    const row = await this.#load(who, id, "write");
    if (input.hosts !== undefined) {
      // where a key may be sent decides who may read it: not an editor's choice
      await this.#access.require(row.orgId, who, "manage", "secret");
      const bad = hostsBad({ use: row.use, hosts: input.hosts });
      if ((row.use !== "model" && row.use !== "egress") || row.aliasOf !== null || bad)
        throw new WarrenError(
          "request.invalid",
          row.aliasOf !== null
            ? `body.hosts: this secret is an alias; change the hosts of the secret it names (${row.aliasOf})`
            : `body.hosts: ${bad ?? "hosts are for a secret of use model or egress"}`,
        );
    }
    const grants = input.grants ? await this.#checkGrants(row.orgId, input.grants) : undefined;
    const move = input.use !== undefined && input.use !== row.use;
    if (move) {
      await this.#access.require(row.orgId, who, "manage", "secret");
      if (row.use !== "env")
        throw new WarrenError(
          "request.invalid",
          `body.use: a secret of use ${row.use} keeps it; only env moves to tool`,
        );
      if (row.aliasOf !== null)
        throw new WarrenError(
          "request.invalid",
          `body.use: this is an alias; move the secret it names (${row.aliasOf}), its aliases follow`,
        );
    }
    await this.#db.transaction(async (tx) => {
      if (move)
        // the secret and its aliases: an alias always has the use of the secret it names
        await tx
          .update(schema.secrets)
          .set({ use: "tool", updatedAt: new Date() })
          .where(or(eq(schema.secrets.id, id), eq(schema.secrets.aliasOf, id)));
      await tx
        .update(schema.secrets)
        .set({
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.hosts !== undefined ? { hosts: [...new Set(input.hosts)] } : {}),
          updatedAt: new Date(),
        })
        .where(eq(schema.secrets.id, id));
      if (grants) {
        await tx.delete(schema.secretGrants).where(eq(schema.secretGrants.secretId, id));
        if (grants.length > 0)
          await tx
            .insert(schema.secretGrants)
            .values(grants.map((g) => ({ secretId: id, scope: g.scope, targetId: g.id })));
      }
    });
    if (grants || move) await this.#changed(row.orgId);
    return this.get(who, id);
  }

  async delete(who: Identity, id: string): Promise<void> {
    await this.#load(who, id, "write");
    await this.#db.delete(schema.secrets).where(eq(schema.secrets.id, id));
  }

  #follow(agentId: string, fn: (value: Buffer) => void): () => void {
    let set = this.#followers.get(agentId);
    if (!set) this.#followers.set(agentId, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.#followers.get(agentId) === set) this.#followers.delete(agentId);
    };
  }

  /**
   * The names and descriptions of the secrets that reach an agent (warren-secret list):
   * what its commands' environment holds (use env), never a value.
   */
  async namesFor(agent: { id: string; orgId: string }): Promise<{ name: string; description: string }[]> {
    const rows = await this.#reach.rows(agent);
    return rows.filter((r) => r.use === "env").map((r) => ({ name: r.name, description: r.description }));
  }

  /**
   * A secret an agent stores from its box (warren-secret store): granted to that agent
   * alone, stored_by_agent set; at most STORED_PER_AGENT per agent (secret.limit). The
   * value joins the log's redaction and that of the agent's running commands at once.
   * `name` and `value` are checked by the caller (secretName, secretValue).
   */
  async storeFromAgent(agent: { id: string; orgId: string }, name: string, value: string): Promise<string> {
    const id = newId("sec");
    const sealed = seal(this.#key, id, Buffer.from(value, "utf8"));
    try {
      await this.#db.transaction(async (tx) => {
        // one store at a time per agent: the count below holds until the commit
        await tx
          .select({ id: schema.agents.id })
          .from(schema.agents)
          .where(eq(schema.agents.id, agent.id))
          .for("update");
        const [counted] = await tx
          .select({ n: count() })
          .from(schema.secrets)
          .where(eq(schema.secrets.storedByAgent, agent.id));
        if ((counted?.n ?? 0) >= STORED_PER_AGENT)
          throw new WarrenError(
            "secret.limit",
            `this agent already stored ${STORED_PER_AGENT} secrets; an operator can delete some (warren secrets delete)`,
          );
        await tx.insert(schema.secrets).values({
          id,
          orgId: agent.orgId,
          name,
          description: "",
          sealed,
          storedByAgent: agent.id,
        });
        await tx.insert(schema.secretGrants).values({ secretId: id, scope: "agent", targetId: agent.id });
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new WarrenError("request.invalid", `name: this organisation already has a secret ${name}`);
      throw err;
    }
    this.#addToLog(value);
    const bytes = Buffer.from(value, "utf8");
    for (const fn of this.#followers.get(agent.id) ?? []) fn(bytes);
    return id;
  }

  /**
   * What reaches one command of an agent: the secrets of use env as its environment, and
   * every value that reaches the agent (model keys too) in its redactor. A model key is
   * opened here only to be redacted; it never joins `env`.
   */
  async resolve(agent: { id: string; orgId: string }): Promise<ResolvedSecrets> {
    const follow = (fn: (value: Buffer) => void) => this.#follow(agent.id, fn);
    const { env, redactor } = await this.#resolved.get(Reaching.keyOf(agent), async () => {
      const opened = await this.#reach.opened(agent);
      if (opened.length === 0) return { env: {}, redactor: Redactor.empty };
      const env: Record<string, string> = {};
      for (const o of opened) if (o.use === "env") env[o.name] = o.value.toString("utf8");
      // use egress: a marker, never the value (the egress proxy puts it back for its hosts)
      for (const o of opened)
        if (o.use === "egress") env[markerVariable(o.name)] = markerOf(this.#key, agent.id, o.name);
      // a value in a host name comes back lower-cased (egress records, the proxy's answers)
      const values = withCaseForms(opened.map((o) => o.value));
      return { env, redactor: new Redactor(values, SECRET_VALUE_MIN_BYTES) };
    });
    return { env: { ...env }, redactor, follow };
  }

  /**
   * For the tool gateway alone (the headers of http and MCP tools): the secrets of use tool
   * that reach an agent, by name, and those of use env (what agents saved before use tool
   * existed still runs; their answer warns until the secret is moved to tool).
   */
  async toolHeadersFor(agent: { id: string; orgId: string }): Promise<ToolHeaderValues> {
    const out: ToolHeaderValues = {};
    for (const o of await this.#reach.opened(agent))
      if (o.use === "tool" || o.use === "env") {
        // a name is unique in an organisation, so one use per name
        out[o.name] = { use: o.use, value: o.value.toString("utf8") };
      }
    return out;
  }

  /** For the egress proxy alone: the secrets of use egress that reach an agent, with their markers. */
  async egressFor(agent: { id: string; orgId: string }): Promise<readonly EgressHeld[]> {
    return egressOf(this.#key, agent.id, await this.#reach.opened(agent));
  }

  /**
   * For the model gateway alone: the secrets that reach an agent, by name, with their use
   * (the gateway takes a key only from a secret of use model) and the hosts it may go to.
   */
  async keysFor(agent: { id: string; orgId: string }): Promise<Record<string, ModelKey>> {
    const out: Record<string, ModelKey> = {};
    for (const o of await this.#reach.opened(agent))
      out[o.name] = { use: o.use, value: o.value.toString("utf8"), hosts: o.hosts };
    return out;
  }
}
