// Egress: the agents' way out of their boxes. The proxy (proxy.ts) takes the connections
// of the boxes' `egress` bridge; this service gives it each agent's policy as a connection
// opens (a change reaches the next connection), resolves names, stores every decision
// (and puts it in the trace of the run going on for the agent), and lists them.
import dns from "node:dns/promises";
import os from "node:os";
import { and, desc, eq, lt } from "drizzle-orm";
import type { Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import { policyOf } from "../agents/service.js";
import type { BridgeStreamHandler } from "../bridges/index.js";
import { parseIp } from "../contract/policy.js";
import type { EgressEvent, EgressList } from "../contract/types.js";
import type { Logger } from "../observability/log.js";
import type { Records } from "../records/index.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { compilePolicy, formatIp } from "./policy.js";
import { EgressProxy, type EgressRecord } from "./proxy.js";

export interface EgressOptions {
  db: Db;
  agents: Agents;
  logger: Logger;
  /** The one writer of records: stores the decisions, redacted. */
  records: Pick<Records, "egress">;
  /** The run going on for an agent now, if any. */
  runOf: (agentId: string) => string | undefined;
  /** Connections open at once per agent. */
  maxConnections: number;
  /**
   * Names and their addresses, used instead of the system's resolver (tests: upstreams on
   * this host's loopback under test names). A name not in it does not resolve.
   */
  hosts?: Record<string, string[]>;
}

const FLUSH_MS = 100;
const FLUSH_AT = 200;
const LOOKUP_MS = 5000;

function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? []) {
      const bytes = parseIp(a.address.split("%")[0] ?? "");
      if (bytes) out.add(formatIp(bytes));
    }
  return out;
}

export class Egress {
  readonly #o: EgressOptions;
  readonly #proxy: EgressProxy;
  #queue: EgressRecord[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  #own = ownAddresses();
  #ownAt = Date.now();

  constructor(o: EgressOptions) {
    this.#o = o;
    this.#proxy = new EgressProxy({
      resolve: (host) => this.#resolve(host),
      ownAddresses: () => this.#ownNow(),
      maxConnections: o.maxConnections,
      onRecord: (r) => this.#enqueue(r),
    });
  }

  /** The `egress` bridge's handler: one connection of an agent's command. */
  readonly handler: BridgeStreamHandler = (stream, who) => {
    void (async () => {
      try {
        const [row] = await this.#o.db
          .select({ sandboxPolicy: schema.agents.sandboxPolicy })
          .from(schema.agents)
          .where(eq(schema.agents.id, who.agentId));
        if (!row) return void stream.destroy();
        this.#proxy.serve(stream, {
          agentId: who.agentId,
          runId: () => this.#o.runOf(who.agentId) ?? null,
          policy: compilePolicy(policyOf(row).network),
        });
      } catch (err) {
        this.#o.logger.error({ err, agentId: who.agentId }, "an egress connection failed to open");
        stream.destroy();
      }
    })();
  };

  #ownNow(): Set<string> {
    if (Date.now() - this.#ownAt > 10_000) {
      this.#own = ownAddresses();
      this.#ownAt = Date.now();
    }
    return this.#own;
  }

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
