// Egress approvals: a connection of a run to a host outside its agent's allow list that the
// policy's `network.ask` names (or all of them, "*") is held while a person decides. The proxy
// (proxy.ts) judges the address first, as for any host, and holds only what an allow would
// let through; this module raises the approval (src/approvals, tool `egress`, bound to the
// run, the host, the port and, for plain HTTP, the method), and remembers each decision for
// the rest of the run: allowed, that run reaches it (the same connection again too); denied,
// it is refused without asking again. A wait that outlives EGRESS_ASK_TIMEOUT_S, or its run,
// expires: refused, and asked again on the next attempt. Connections of one run to the same
// target join the one approval waiting. Nothing of this runs for a host the list allows.
import crypto from "node:crypto";
import type { Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import { policyOf } from "../agents/service.js";
import { ApprovalExpired, type ApprovalDoor } from "../approvals/types.js";
import { WarrenError } from "../errors.js";
import type { EventBus } from "../events/index.js";
import type { Target } from "./policy.js";
import type { EgressContext } from "./wire.js";

/** Why a connection whose client left while it was decided (held for a person) goes no further. */
export const GONE = "the client went away before the connection was made";

/** A plain HTTP request's method and path; null for a tunnel (CONNECT, SOCKS). */
type Plain = { method: string; path: string } | null;

/** What a held connection gets: through (with why, for its record) or refused (why). */
type Held = { ok: true; reason: string } | { ok: false; reason: string };

/** The proxy's side of asking (ProxyOptions.ask). */
export interface EgressAsker {
  /** Holds a connection until a person decides (or the wait expires). */
  hold(ctx: EgressContext, t: Target, plain: Plain): Promise<Held>;
  /** Whether the run going on now was allowed to reach this target. */
  granted(ctx: EgressContext, t: Target, plain: Plain): boolean;
}

export interface AskOptions {
  approvals: ApprovalDoor;
  /** The signal of a run going on (aborted as it is cancelled or times out); undefined once it ended. */
  runSignal(runId: string): AbortSignal | undefined;
  /** How long a connection waits for a decision. */
  timeoutMs: number;
  /** Where runs' ends are heard (run.ended): their waits expire, their decisions go. */
  events?: Pick<EventBus, "on">;
}

/** What is known of a run going on: each target's decision, and its end. */
interface RunAsks {
  /** By key: `host:port` (a tunnel), or `METHOD host:port` (plain HTTP). */
  decided: Map<string, Held>;
  ended: AbortController;
}

/** host:port as the allow list writes it (an IPv6 address in brackets). */
const entryOf = (t: Pick<Target, "host" | "port">): string =>
  `${t.host.includes(":") ? `[${t.host}]` : t.host}:${t.port}`;

/** What an egress approval names: its `arguments`, whose canonical JSON's SHA-256 it carries. */
function argsOf(t: Target, plain: Plain): Record<string, string | number> {
  return plain ? { host: t.host, method: plain.method, port: t.port } : { host: t.host, port: t.port };
}

export class EgressAsk implements EgressAsker {
  readonly #o: AskOptions;
  /** The runs that asked, until they end. */
  readonly #runs = new Map<string, RunAsks>();
  /** The waits going on, by run and key: a second connection to the same target joins it. */
  readonly #waiting = new Map<string, Promise<Held>>();

  constructor(o: AskOptions) {
    this.#o = o;
    o.events?.on("run.ended", (e) => this.#ended(e.runId));
  }

  #ended(runId: string): void {
    this.#runs.get(runId)?.ended.abort();
    this.#runs.delete(runId);
  }

  hold(ctx: EgressContext, t: Target, plain: Plain): Promise<Held> {
    const runId = ctx.runId();
    const name = entryOf(t);
    if (runId === null || !this.#o.runSignal(runId))
      return Promise.resolve({
        ok: false,
        reason: `${name} is not in the agent's network allow list, and no run is going on to ask a person about it`,
      });
    this.#forgetEnded();
    const key = plain ? `${plain.method} ${name}` : name;
    const known = this.#runs.get(runId)?.decided.get(key);
    if (known) return Promise.resolve(known);
    const wait = `${runId}\n${key}`;
    let asked = this.#waiting.get(wait);
    if (!asked) {
      asked = this.#ask(runId, key, t, plain).finally(() => this.#waiting.delete(wait));
      this.#waiting.set(wait, asked);
    }
    return asked;
  }

  granted(ctx: EgressContext, t: Target, plain: Plain): boolean {
    const runId = ctx.runId();
    const name = entryOf(t);
    return (
      runId !== null &&
      this.#runs.get(runId)?.decided.get(plain ? `${plain.method} ${name}` : name)?.ok === true
    );
  }

  /** The decisions of runs that ended go with them (whose end was not heard). */
  #forgetEnded(): void {
    for (const runId of this.#runs.keys()) if (!this.#o.runSignal(runId)) this.#ended(runId);
  }

  async #ask(runId: string, key: string, t: Target, plain: Plain): Promise<Held> {
    const run = this.#o.runSignal(runId);
    const asks = this.#runs.get(runId) ?? { decided: new Map<string, Held>(), ended: new AbortController() };
    this.#runs.set(runId, asks);
    const what = plain ? `${plain.method} to ${entryOf(t)}` : entryOf(t);
    const args = argsOf(t, plain);
    const canonical = JSON.stringify(args, Object.keys(args).sort());
    const wait = new AbortController();
    const timer = setTimeout(
      () => wait.abort(new ApprovalExpired(`no decision within ${Math.round(this.#o.timeoutMs / 1000)} s`)),
      this.#o.timeoutMs,
    );
    const onRunEnd = () => wait.abort();
    for (const s of [run, asks.ended.signal]) s?.addEventListener("abort", onRunEnd, { once: true });
    if (run?.aborted) onRunEnd();
    try {
      const a = await this.#o.approvals.ask(
        {
          runId,
          toolCallId: `egress ${key}`,
          tool: "egress",
          arguments: args,
          argsSha256: crypto.createHash("sha256").update(canonical).digest("hex"),
          policies: [],
          deciders: [],
        },
        wait.signal,
      );
      // expired (no one decided): refused now, asked again on the next attempt
      if (a.decidedBy === null)
        return {
          ok: false,
          reason: `${what} was held for a person's approval, which expired: ${a.message ?? ""}`,
        };
      const held: Held =
        a.decision === "allow"
          ? { ok: true, reason: `allowed by ${a.decidedBy}'s approval for this run` }
          : {
              ok: false,
              reason: `${what} was denied by ${a.decidedBy}${a.message ? `: ${a.message}` : ""}`,
            };
      if (this.#runs.get(runId) === asks && !asks.ended.signal.aborted) asks.decided.set(key, held);
      return held;
    } catch {
      // the server stops while it waits (the approval is left for the next server to expire)
      return { ok: false, reason: `${what} was held for a person's approval, and the server stopped` };
    } finally {
      clearTimeout(timer);
      for (const s of [run, asks.ended.signal]) s?.removeEventListener("abort", onRunEnd);
    }
  }
}

/**
 * Adds the host and port an egress approval names to its agent's network allow list, as a
 * new version by the decider (who must be able to change the agent); nothing when it is there.
 */
export async function addToAllowList(
  agents: Pick<Agents, "load" | "update">,
  who: Identity,
  agentId: string,
  args: unknown,
): Promise<void> {
  const a = args as { host?: unknown; port?: unknown } | null;
  if (typeof a?.host !== "string" || typeof a.port !== "number")
    throw new WarrenError("request.invalid", "the approval names no host and port to add", {
      field: "add_to_policy",
    });
  const row = await agents.load(who, agentId, "write");
  const policy = policyOf(row);
  const entry = entryOf({ host: a.host, port: a.port });
  if (policy.network.allow.includes(entry)) return;
  await agents.update(who, agentId, {
    sandbox_policy: { ...policy, network: { ...policy.network, allow: [...policy.network.allow, entry] } },
  });
}
