// Approvals: a person's decision on one exact tool call. A call that a permit annotated
// `@approval("required")` allows waits here: its run is `waiting` (waiting.reason approval),
// an approval record names the call (its id, tool, arguments, their SHA-256, the policy's
// version), and only a decision that carries that digest, for that call while it still
// waits, decides it; anything else is approval.stale. A decline is the tool's answer to the
// model; the tool never runs. When the server stops, a waiting call is suspended, not
// expired: its approval stays waiting, and the next server's run asks again for the same call,
// which re-attaches to it (src/runs/resume.ts). A decision, once stored, is told on the event
// bus (approval.decided); the call waiting for it is released by this service's listener of
// that event. A run taken up after a restart that ends without asking again (run.ended) has
// its approvals still waiting expire.
import { and, desc, eq, inArray, notInArray } from "drizzle-orm";
import type { Access, Identity, Role } from "../access/index.js";
import type { Approval } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { DECIDING_ROLES } from "../contract/lists.js";
import { newId } from "../ids.js";
import type { Records } from "../records/index.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { EventBus } from "../events/index.js";
import {
  ApprovalExpired,
  ApprovalSuspended,
  type ApprovalAnswer,
  type ApprovalAsk,
  type ApprovalDoor,
  type KeepWaiting,
} from "./types.js";

type ApprovalRow = typeof schema.approvals.$inferSelect;

interface Seat {
  role: Role;
  fenced: boolean;
}

/**
 * Who may decide an approval: owners and admins always; where its permits name deciders,
 * those people (by email) and the members of those roles; where they name nobody, editors
 * who hold no area (a fenced editor may not run commands, so neither may it approve one).
 */
export function mayDecide(r: Pick<ApprovalRow, "deciders">, who: Identity, seat: Seat): boolean {
  if (seat.role === "owner" || seat.role === "admin") return true;
  if (r.deciders.length === 0) return seat.role === "editor" && !seat.fenced;
  if (!DECIDING_ROLES.includes(seat.role)) return false;
  return r.deciders.includes(who.email.toLowerCase()) || r.deciders.includes(seat.role);
}

const whoDecides = (r: Pick<ApprovalRow, "deciders">): string =>
  r.deciders.length === 0
    ? "its organisation's owners, admins and editors who hold no area"
    : `${r.deciders.join(", ")} (and the organisation's owners and admins)`;

export interface ApprovalsOptions {
  db: Db;
  access: Access;
  records: Pick<Records, "runEvent" | "updateRun" | "redactedFor">;
  /**
   * Adds what an egress approval (tool `egress`) names to its agent's network allow list, as a
   * new version by the decider (a decision with `add_to_policy`); throws what refuses it.
   */
  addToPolicy?: (who: Identity, agentId: string, args: unknown) => Promise<void>;
  /** Where a decision is told (approval.decided) and runs' ends are heard (run.ended). */
  events: Pick<EventBus, "emit" | "on">;
}

/** A call waiting in this process for its decision. */
interface Waiting {
  runId: string;
  since: Date;
  decide: (a: ApprovalAnswer) => void;
  suspend: () => void;
}

function view(r: ApprovalRow, mayDecide?: boolean): Approval {
  return {
    id: r.id,
    run_id: r.runId,
    agent_id: r.agentId,
    tool_call_id: r.toolCallId,
    tool: r.tool,
    arguments: r.arguments,
    args_sha256: r.argsSha256,
    policy_version: r.policyVersion,
    policies: r.policies,
    deciders: r.deciders,
    ...(mayDecide !== undefined ? { may_decide: mayDecide } : {}),
    status: r.status,
    message: r.message,
    ...(r.decidedBy !== null ? { decided_by: r.decidedBy } : {}),
    created_at: r.createdAt.toISOString(),
    decided_at: r.decidedAt?.toISOString() ?? null,
  };
}

export class Approvals implements ApprovalDoor {
  readonly #o: ApprovalsOptions;
  /** The calls waiting in this process, by approval id: their decision is handed over here. */
  readonly #waiting = new Map<string, Waiting>();
  /** The calls decided, until the decision's event releases them (approval.decided). */
  readonly #decided = new Map<string, Waiting>();
  /** The runs taken up after a restart with an approval still waiting (see expireOrphans). */
  readonly #resumed = new Set<string>();
  /** Set as the server stops: a call whose run is aborted now is suspended, not expired. */
  #stopping = false;

  constructor(o: ApprovalsOptions) {
    this.#o = o;
    o.events.on("approval.decided", (e) => this.#release(e));
    o.events.on("run.ended", (e) => (this.#resumed.delete(e.runId) ? this.#expireEnded(e.runId) : undefined));
  }

  /** A call waits for its decision (or its run's end); the run is `waiting` meanwhile. */
  async ask(req: ApprovalAsk, signal: AbortSignal, keep?: KeepWaiting): Promise<ApprovalAnswer> {
    const o = this.#o;
    const [run] = await o.db
      .select({ orgId: schema.runs.orgId, agentId: schema.runs.agentId, version: schema.runs.specVersion })
      .from(schema.runs)
      .where(eq(schema.runs.id, req.runId));
    if (!run) return { decision: "deny", message: "the run has no record", decidedBy: null };
    // the same call, asked again by a run taken up after a restart: its approval still waits
    const [open] = await o.db
      .select()
      .from(schema.approvals)
      .where(
        and(
          eq(schema.approvals.runId, req.runId),
          eq(schema.approvals.toolCallId, req.toolCallId),
          eq(schema.approvals.status, "waiting"),
        ),
      );
    if (open && open.argsSha256 !== req.argsSha256) {
      const why =
        "the server restarted while the call waited, and its arguments could not be restored as they were (they held a secret, kept redacted); it was not run";
      await o.db
        .update(schema.approvals)
        .set({ status: "expired", message: why, decidedAt: new Date() })
        .where(and(eq(schema.approvals.id, open.id), eq(schema.approvals.status, "waiting")));
      return { decision: "deny", message: why, decidedBy: null };
    }
    const id = open?.id ?? newId("apr");
    const since = open?.createdAt ?? new Date();
    let suspended = false;
    const answered = new Promise<ApprovalAnswer>((resolve, reject) => {
      const suspend = () => {
        suspended = true;
        reject(new ApprovalSuspended());
      };
      this.#waiting.set(id, { runId: req.runId, since, decide: resolve, suspend });
    });
    const row =
      open ??
      (
        await o.db
          .insert(schema.approvals)
          .values({
            id,
            orgId: run.orgId,
            agentId: run.agentId,
            runId: req.runId,
            toolCallId: req.toolCallId,
            tool: req.tool,
            // what the model asked for, as every record of the agent's work: redacted of every
            // value that reaches it (the digest is of the call itself, which the tool runs on)
            arguments: await o.records.redactedFor(run.agentId, req.arguments ?? {}),
            argsSha256: req.argsSha256,
            policyVersion: run.version,
            policies: req.policies,
            deciders: req.deciders,
            status: "waiting",
            createdAt: since,
          })
          .returning()
      )[0]!;
    await o.records.updateRun(req.runId, { status: "waiting" }, eq(schema.runs.status, "running"));
    await o.records.runEvent(req.runId, "approval", { ...view(row), ...(open ? { resumed: true } : {}) });
    // where the run stands is kept while it waits, for a server that dies meanwhile (src/runs/resume.ts)
    await keep?.();
    // a wait given up for its own reason (ApprovalExpired: an egress hold's time) says it
    const onAbort = () =>
      void this.#expire(
        id,
        signal.reason instanceof ApprovalExpired ? signal.reason.message : "the run ended before a decision",
      );
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    try {
      const answer = await answered;
      return answer;
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#waiting.delete(id);
      // a suspended run stays waiting for the next server; a decided one is not taken up again
      if (!suspended) {
        if (keep) await o.db.delete(schema.runSuspensions).where(eq(schema.runSuspensions.runId, req.runId));
        // another wait of the same run (a connection held for an egress approval) keeps it waiting
        if (!this.waitingOf(req.runId))
          await o.records.updateRun(req.runId, { status: "running" }, eq(schema.runs.status, "waiting"));
      }
    }
  }

  /**
   * As the server stops: the calls waiting now, and those whose runs are aborted from now on,
   * are suspended (their approvals stay waiting for the next server), not expired.
   */
  suspendWaiting(): void {
    this.#stopping = true;
  }

  /**
   * A run taken up after a restart ended without asking again (its limit passed, or it was
   * cancelled, before its call re-attached): its approvals still waiting expire.
   */
  #expireEnded(runId: string): Promise<number> {
    return this.#expireLeft("the run ended before a decision", ["queued", "running", "waiting"], runId);
  }

  async #expire(id: string, why: string): Promise<void> {
    const w = this.#waiting.get(id);
    if (!w) return;
    this.#waiting.delete(id);
    if (this.#stopping) return w.suspend();
    await this.#o.db
      .update(schema.approvals)
      .set({ status: "expired", message: why, decidedAt: new Date() })
      .where(and(eq(schema.approvals.id, id), eq(schema.approvals.status, "waiting")));
    w.decide({ decision: "deny", message: why, decidedBy: null });
  }

  /** Why a run waits, while one of its calls waits for a decision. */
  waitingOf(runId: string): { reason: "approval"; since: string; position: number } | undefined {
    for (const w of this.#waiting.values())
      if (w.runId === runId) return { reason: "approval", since: w.since.toISOString(), position: 1 };
    return undefined;
  }

  /**
   * Decides a waiting call. The decision must carry the digest of the arguments it waits
   * with; a call no longer waiting (decided, or its run ended) or other arguments are stale.
   */
  async decide(
    who: Identity,
    id: string,
    body: {
      decision: "allow" | "deny";
      message?: string | undefined;
      args_sha256: string;
      add_to_policy?: boolean | undefined;
    },
  ): Promise<Approval> {
    const o = this.#o;
    const [row] = await o.db.select().from(schema.approvals).where(eq(schema.approvals.id, id));
    if (!row) throw new WarrenError("not_found", "approval was not found");
    if (body.add_to_policy && (row.tool !== "egress" || body.decision !== "allow" || !o.addToPolicy))
      throw new WarrenError(
        "request.invalid",
        "add_to_policy goes with allowing an egress approval (a host a run asked to reach), not with a tool call or a denial",
        { field: "add_to_policy" },
      );
    const seat = await this.#seat(row.orgId, who);
    if (!mayDecide(row, who, seat))
      throw new WarrenError(
        "access.denied",
        `this approval is decided by ${whoDecides(row)}; your role in this organisation is ${seat.role}${seat.fenced ? " with areas" : ""}`,
      );
    if (row.status !== "waiting" || !this.#waiting.has(id))
      throw new WarrenError(
        "approval.stale",
        `the call ${row.toolCallId} no longer waits for a decision (it is ${row.status === "waiting" ? "no longer waiting" : row.status}); see the run's approvals for the one waiting now`,
      );
    if (body.args_sha256.toLowerCase() !== row.argsSha256)
      throw new WarrenError(
        "approval.stale",
        `the decision names other arguments (sha256 ${body.args_sha256}) than the call waits with (${row.argsSha256}); read the approval again and decide on what it shows`,
      );
    // the host joins the agent's allow list first: what refuses that leaves the approval waiting
    if (body.add_to_policy) await o.addToPolicy?.(who, row.agentId, row.arguments);
    const status = body.decision === "allow" ? "allowed" : "denied";
    const [decided] = await o.db
      .update(schema.approvals)
      .set({ status, message: body.message ?? null, decidedBy: who.email, decidedAt: new Date() })
      .where(and(eq(schema.approvals.id, id), eq(schema.approvals.status, "waiting")))
      .returning();
    const w = this.#waiting.get(id);
    if (!decided || !w)
      throw new WarrenError("approval.stale", `the call ${row.toolCallId} was decided meanwhile`);
    this.#waiting.delete(id);
    this.#decided.set(id, w);
    await o.records.runEvent(row.runId, "approval", view(decided));
    o.events.emit("approval.decided", {
      approvalId: id,
      runId: row.runId,
      decision: body.decision,
      message: body.message ?? null,
      decidedBy: who.email,
    });
    return view(decided, false);
  }

  /**
   * A person answers an agent's waiting secret_request with the value: `store` keeps it as a
   * secret of the organisation granted to the asking agent (the secrets API's own checks: a
   * person allowed to write secrets), then the call is allowed and released; it answers the
   * agent with the name only. Anything but a waiting secret request is refused as a decision is.
   */
  async provide(
    who: Identity,
    id: string,
    argsSha256: string,
    store: (req: { orgId: string; agentId: string; name: string; description: string }) => Promise<void>,
  ): Promise<Approval> {
    const [row] = await this.#o.db.select().from(schema.approvals).where(eq(schema.approvals.id, id));
    if (!row) throw new WarrenError("not_found", "approval was not found");
    const seat = await this.#seat(row.orgId, who);
    if (row.tool !== "secret_request")
      throw new WarrenError(
        "request.invalid",
        "this approval is a tool call's, not an agent's secret request; decide it with POST /api/approvals/:id",
      );
    if (!mayDecide(row, who, seat))
      throw new WarrenError(
        "access.denied",
        `this request is answered by ${whoDecides(row)}; your role in this organisation is ${seat.role}`,
      );
    if (row.status !== "waiting" || !this.#waiting.has(id))
      throw new WarrenError(
        "approval.stale",
        `the secret request ${row.toolCallId} no longer waits (it is ${row.status === "waiting" ? "no longer waiting" : row.status})`,
      );
    if (argsSha256.toLowerCase() !== row.argsSha256)
      throw new WarrenError(
        "approval.stale",
        `the answer names another request (sha256 ${argsSha256}) than the one waiting (${row.argsSha256})`,
      );
    const args = (row.arguments ?? {}) as { name?: unknown; description?: unknown; why?: unknown };
    await store({
      orgId: row.orgId,
      agentId: row.agentId,
      name: String(args.name),
      description: typeof args.description === "string" ? args.description.slice(0, 1000) : "",
    });
    return this.decide(who, id, { decision: "allow", message: "given", args_sha256: row.argsSha256 });
  }

  /** A stored decision (approval.decided) releases the call waiting for it in this process. */
  #release(e: { approvalId: string } & ApprovalAnswer): void {
    const w = this.#decided.get(e.approvalId);
    if (!w) return;
    this.#decided.delete(e.approvalId);
    w.decide({ decision: e.decision, message: e.message, decidedBy: e.decidedBy });
  }

  /** The caller's role (after `read`: a non-member is not_found) and whether areas fence them. */
  async #seat(orgId: string, who: Identity): Promise<Seat> {
    const role = await this.#o.access.require(orgId, who, "read", "approval");
    return { role, fenced: (await this.#o.access.areasOf(orgId, who)).length > 0 };
  }

  async forRun(who: Identity, runId: string): Promise<Approval[]> {
    const [run] = await this.#o.db
      .select({ orgId: schema.runs.orgId })
      .from(schema.runs)
      .where(eq(schema.runs.id, runId));
    if (!run) throw new WarrenError("not_found", "run was not found");
    const seat = await this.#seat(run.orgId, who);
    const rows = await this.#o.db
      .select()
      .from(schema.approvals)
      .where(eq(schema.approvals.runId, runId))
      .orderBy(schema.approvals.createdAt);
    return rows.map((r) => view(r, r.status === "waiting" && mayDecide(r, who, seat)));
  }

  /** The organisation's approvals, newest first; `mine`: only those waiting for the caller's decision. */
  async forOrg(
    who: Identity,
    orgId: string,
    status: ApprovalRow["status"] | undefined,
    mine = false,
  ): Promise<Approval[]> {
    const seat = await this.#seat(orgId, who);
    const where = [eq(schema.approvals.orgId, orgId)];
    if (status || mine) where.push(eq(schema.approvals.status, mine ? "waiting" : status!));
    const rows = await this.#o.db
      .select()
      .from(schema.approvals)
      .where(and(...where))
      .orderBy(desc(schema.approvals.createdAt))
      .limit(500);
    const shown = rows.map((r) => ({ r, may: r.status === "waiting" && mayDecide(r, who, seat) }));
    return (mine ? shown.filter((x) => x.may) : shown).map((x) => view(x.r, x.may));
  }

  /**
   * At boot, once the runs cut short are recorded as lost: their approvals expire, saying so;
   * those of the runs still waiting (suspended, taken up again: src/runs/resume.ts) go on.
   */
  async expireOrphans(): Promise<number> {
    const n = await this.#expireLeft("the server stopped while the call waited", ["waiting"]);
    const left = await this.#o.db
      .selectDistinct({ runId: schema.approvals.runId })
      .from(schema.approvals)
      .where(eq(schema.approvals.status, "waiting"));
    for (const r of left) this.#resumed.add(r.runId);
    return n;
  }

  /** Approvals still waiting whose runs are in none of `going` (of run `runId` alone, when named). */
  async #expireLeft(
    why: string,
    going: (typeof schema.runs.$inferSelect)["status"][],
    runId?: string,
  ): Promise<number> {
    const on = this.#o.db
      .select({ id: schema.runs.id })
      .from(schema.runs)
      .where(inArray(schema.runs.status, going));
    const rows = await this.#o.db
      .update(schema.approvals)
      .set({ status: "expired", message: why, decidedAt: new Date() })
      .where(
        and(
          eq(schema.approvals.status, "waiting"),
          runId === undefined ? undefined : eq(schema.approvals.runId, runId),
          notInArray(schema.approvals.runId, on),
        ),
      )
      .returning({ id: schema.approvals.id });
    return rows.length;
  }
}
