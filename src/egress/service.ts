// Egress: the agents' way out of their boxes. The proxy (proxy.ts) takes the connections
// of the boxes' `egress` bridge; this service gives it each agent's policy as it is now (read
// for every request and tunnel; every live one re-checked every RECHECK_MS, so a revoked entry
// ends it), the address rule and the server's own endpoints, resolves names, stores every
// decision (and puts it in the trace of the run going on for the agent), and lists them.
import dns from "node:dns/promises";
import { and, desc, eq, inArray, lt } from "drizzle-orm";
import type { Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import { policyOf } from "../agents/service.js";
import type { BridgeStreamHandler } from "../bridges/index.js";
import { parseIp, type SandboxPolicy } from "../contract/policy.js";
import type { OwnEndpoints } from "../net/own.js";
import type { AddressRule } from "../net/rule.js";
import type { EgressEvent, EgressList } from "../contract/types.js";
import type { Logger } from "../observability/log.js";
import type { Records } from "../records/index.js";
import type { Db } from "../store/index.js";
import { memo, schema } from "../store/index.js";
import { egressSpan } from "../observability/tracing.js";
import { compilePolicy, type CompiledPolicy } from "./policy.js";
import { EgressAsk, type AskOptions } from "./ask.js";
import type { Injection } from "./inject.js";
import { EgressProxy, type EgressRecord } from "./proxy.js";

export interface EgressOptions {
  db: Db;
  agents: Agents;
  logger: Logger;
  /** The one writer of records: stores the decisions, redacted. */
  records: Pick<Records, "egress">;
  /** The run going on for an agent now, if any. */
  runOf: (agentId: string) => string | undefined;
  /**
   * The sandbox policy the run going on for an agent keeps (its version's), if any: it wins
   * over the agent's policy as it is now, so a change does not reach a run already going.
   */
  pinnedPolicy?: (agentId: string) => SandboxPolicy | undefined;
  /** Where a connection may go at all, whatever a policy says (the one rule of src/net/rule.ts). */
  rule: AddressRule;
  /** The server's own endpoints: every upstream socket of the proxy is tracked there. */
  own: Pick<OwnEndpoints, "track">;
  /** Connections open at once per agent. */
  maxConnections: number;
  /**
   * Names and their addresses, used instead of the system's resolver (tests: upstreams on
   * this host's loopback under test names). A name not in it does not resolve.
   */
  hosts?: Record<string, string[]>;
  /** Where connections to hosts a policy's `network.ask` names wait for a person (ask.ts); none: refused. */
  ask?: AskOptions;
  /** Secrets held by the proxy (inject.ts): markers replaced in requests to their hosts. */
  inject?: Injection;
}

/** What an agent's egress policy is read from: its sandbox policy and its organisation's deny list. */
interface PolicyRow {
  id: string;
  sandboxPolicy: unknown;
  networkDeny: string[] | null;
}

const FLUSH_MS = 100;
const FLUSH_AT = 200;
const LOOKUP_MS = 5000;
/** How often every live request and tunnel is decided again by its agent's policy as it is now. */
export const RECHECK_MS = 2000;

export class Egress {
  readonly #o: EgressOptions;
  readonly #proxy: EgressProxy;
  #queue: EgressRecord[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  /** The last policy compiled per agent (by its text: a policy compiles once per change). */
  readonly #compiled = new Map<string, CompiledPolicy>();
  /**
   * Each agent's policy row with its organisation's deny list, read once per write of either
   * table (the store's change stamps, as Access keeps roles): not at every request and tunnel.
   */
  readonly #rows: ReturnType<typeof memo<string, PolicyRow | undefined>>;
  readonly #recheck: NodeJS.Timeout;
  #checking = false;

  constructor(o: EgressOptions) {
    this.#o = o;
    this.#rows = memo(o.db, [schema.agents, schema.orgGuardrails]);
    this.#proxy = new EgressProxy({
      resolve: (host) => this.#resolve(host),
      rule: o.rule,
      track: (socket) => o.own.track(socket),
      maxConnections: o.maxConnections,
      onRecord: (r) => this.#enqueue(r),
      ...(o.ask ? { ask: new EgressAsk(o.ask) } : {}),
      ...(o.inject ? { inject: o.inject } : {}),
    });
    this.#recheck = setInterval(() => void this.#recheckLive(), RECHECK_MS);
    this.#recheck.unref();
  }

  #compile(
    agentId: string,
    row: { sandboxPolicy: unknown; networkDeny: string[] | null } | undefined,
  ): CompiledPolicy {
    const pinned = row ? this.#o.pinnedPolicy?.(agentId) : undefined;
    const network = pinned ? pinned.network : row ? policyOf(row).network : { allow: [] };
    // the organisation's deny list bounds every policy, a pinned one too
    const deny = row?.networkDeny ?? [];
    const key = JSON.stringify([network, deny]);
    const last = this.#compiled.get(agentId);
    if (last?.key === key) return last;
    const p = compilePolicy(network, deny);
    this.#compiled.set(agentId, p);
    return p;
  }

  /** Agents' sandbox policies with their organisation's network deny list. */
  #withDeny() {
    return this.#o.db
      .select({
        id: schema.agents.id,
        sandboxPolicy: schema.agents.sandboxPolicy,
        networkDeny: schema.orgGuardrails.networkDeny,
      })
      .from(schema.agents)
      .leftJoin(schema.orgGuardrails, eq(schema.orgGuardrails.orgId, schema.agents.orgId));
  }

  /** The agent's policy row as it is in the store now. */
  #rowNow(agentId: string): Promise<PolicyRow | undefined> {
    return this.#rows.get(
      agentId,
      async () => (await this.#withDeny().where(eq(schema.agents.id, agentId)))[0],
    );
  }

  /** The agent's policy as it is in the store now (a deleted agent's allows nothing). */
  async #policyNow(agentId: string): Promise<CompiledPolicy> {
    return this.#compile(agentId, await this.#rowNow(agentId));
  }

  /** Decides every live request and tunnel again, by the policies as they are now. */
  async #recheckLive(): Promise<void> {
    const agents = this.#proxy.liveAgents();
    if (agents.length === 0 || this.#checking) return;
    this.#checking = true;
    try {
      const rows = await this.#withDeny().where(inArray(schema.agents.id, agents));
      const byId = new Map(rows.map((r) => [r.id, r]));
      for (const id of agents) this.#proxy.recheck(id, this.#compile(id, byId.get(id)));
    } catch (err) {
      this.#o.logger.warn({ err }, "the egress policies could not be read to re-check live connections");
    } finally {
      this.#checking = false;
    }
  }

  /** The `egress` bridge's handler: one connection of an agent's command. */
  readonly handler: BridgeStreamHandler = (stream, who) => {
    void (async () => {
      try {
        const row = await this.#rowNow(who.agentId);
        if (!row) return void stream.destroy();
        this.#compile(who.agentId, row);
        this.#proxy.serve(stream, {
          agentId: who.agentId,
          runId: () => this.#o.runOf(who.agentId) ?? null,
          policy: () => this.#policyNow(who.agentId),
        });
      } catch (err) {
        this.#o.logger.error({ err, agentId: who.agentId }, "an egress connection failed to open");
        stream.destroy();
      }
    })();
  };

  async #resolve(host: string): Promise<number[][]> {
    const table = this.#o.hosts;
    const toBytes = (list: string[]) => list.flatMap((a) => (parseIp(a) ? [parseIp(a) as number[]] : []));
    if (table) return toBytes(table[host] ?? []);
    let timer: NodeJS.Timeout | undefined;
    try {
      const found = await Promise.race([
        dns.lookup(host, { all: true, order: "ipv4first" }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("lookup timed out")), LOOKUP_MS);
        }),
      ]);
      return toBytes(found.map((a) => a.address));
    } finally {
      clearTimeout(timer);
    }
  }

  #enqueue(r: EgressRecord): void {
    egressSpan(r); // OpenTelemetry, when on: a span of the run going on
    this.#queue.push(r);
    if (this.#queue.length >= FLUSH_AT) void this.flush();
    else this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Stores the decisions not yet stored (and their run events). */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return this.#flushing;
    this.#flushing = this.#flushing.then(() => this.#store(batch));
    return this.#flushing;
  }

  async #store(batch: EgressRecord[]): Promise<void> {
    // through the one writer of records: every string (host, path, query, reason) is
    // redacted of the agent's secrets and its run's workload token before it is stored
    const rows = batch.map((r) => ({
      agentId: r.agentId,
      runId: r.runId,
      at: r.at,
      decision: r.decision,
      reason: r.reason,
      host: r.host,
      port: r.port,
      method: r.method,
      path: r.path,
      bytesOut: r.bytesOut,
      bytesIn: r.bytesIn,
      durationMs: r.durationMs,
    }));
    await this.#o.records
      .egress(
        rows,
        (row) =>
          wire({ ...row, runId: row.runId ?? null, method: row.method ?? null, path: row.path ?? null }),
        (err, runId) => this.#o.logger.debug({ err, runId }, "an egress event had no run"),
      )
      .catch((err: unknown) => this.#o.logger.error({ err }, "egress decisions could not be stored"));
  }

  /** The agent's decisions, newest first. */
  async list(
    who: Identity,
    agentId: string,
    q: { decision?: "allowed" | "refused" | undefined; limit: number; before?: string | undefined },
  ): Promise<EgressList> {
    const agent = await this.#o.agents.load(who, agentId, "inspect");
    await this.flush();
    const e = schema.egressEvents;
    const where = [eq(e.agentId, agent.id)];
    if (q.decision) where.push(eq(e.decision, q.decision));
    if (q.before) where.push(lt(e.id, Number(q.before)));
    const rows = await this.#o.db
      .select()
      .from(e)
      .where(and(...where))
      .orderBy(desc(e.id))
      .limit(q.limit + 1);
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      items: page.map((r) => wire(r)),
      ...(rows.length > q.limit && last ? { next: String(last.id) } : {}),
    };
  }

  /** Ends every egress connection and stores what is left. */
  async close(): Promise<void> {
    clearInterval(this.#recheck);
    this.#proxy.close();
    await this.flush();
  }
}

function wire(r: Omit<EgressRecord, "agentId">): EgressEvent {
  return {
    at: r.at.toISOString(),
    decision: r.decision,
    reason: r.reason,
    host: r.host,
    port: r.port,
    ...(r.method !== null ? { method: r.method } : {}),
    ...(r.path !== null ? { path: r.path } : {}),
    bytes_out: r.bytesOut,
    bytes_in: r.bytesIn,
    duration_ms: r.durationMs,
    ...(r.runId !== null ? { run_id: r.runId } : {}),
  };
}
