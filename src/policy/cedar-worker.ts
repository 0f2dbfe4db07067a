// Entry point of a Cedar worker thread (cedar.ts): holds one cedar-wasm instance, checks policy
// text and decides requests, one message at a time. Anything Cedar throws (rather than answers
// as a failure) means the instance may be broken: the worker says so once and answers nothing
// more, and the pool replaces it.

import { parentPort, workerData } from "node:worker_threads";
import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import { DECIDING_ROLES } from "../contract/lists.js";

/** A policy set as the worker preparses it: the policies by id. */
type Policies = Record<string, string>;

export type ToWorker =
  | { id: number; op: "check"; text: string; schema: string }
  | {
      id: number;
      op: "decide";
      /** The policy set's key (the pool's); with `policies` when this worker may not hold it. */
      key: number;
      policies?: Policies;
      request: {
        principal: cedar.EntityUidJson;
        action: cedar.EntityUidJson;
        resource: cedar.EntityUidJson;
        context: Record<string, cedar.CedarValueJson>;
        entities: cedar.EntityJson[];
      };
    }
  /** Tests only (no route sends it): the next request breaks the worker in this way. */
  | { id: number; op: "fault"; how: "wasm" | "exit" | "hang" };

export type FromWorker =
  | { type: "ready" }
  | { type: "checked"; id: number; problem: string; policies?: undefined; forbids?: undefined }
  | {
      type: "checked";
      id: number;
      problem: null;
      policies: Policies;
      forbids: string[];
      asks: string[];
      deciders: Record<string, string[]>;
    }
  | {
      type: "decided";
      id: number;
      decision: "allow" | "deny";
      reason: string[];
      errors: { policyId: string; message: string }[];
    }
  | { type: "failed"; id: number; errors: string[] }
  /** This worker's policy set `key` is not held (the request must come again with its policies). */
  | { type: "missing"; id: number }
  /** Cedar threw: the instance is not to be trusted any more. */
  | { type: "broken"; id: number; message: string };

const port = parentPort;
if (port === null) throw new Error("cedar-worker.ts runs only as a worker thread");

const send = (message: FromWorker): void => port.postMessage(message);

type DetailedError = { message: string; help?: string | null };
const describe = (e: DetailedError): string => (e.help ? `${e.message} (${e.help})` : e.message);

/** The people an approval names: emails or roles that decide (never a guest, viewer or auditor). */
function decidersOf(text: string): string[] | string {
  const names = text
    .split(/[\s,]+/)
    .map((n) => n.trim().toLowerCase())
    .filter(Boolean);
  if (names.length === 0) return "names nobody: write emails or roles, separated by commas";
  if (names.length > 32) return "names more than 32 deciders";
  for (const n of names) {
    if (DECIDING_ROLES.includes(n)) continue;
    if (/^[^\s@<>,;"]{1,128}@[^\s@<>,;"]{1,255}$/.test(n)) continue;
    return `names ${JSON.stringify(n)}, which is neither an email nor a role that decides (${DECIDING_ROLES.join(", ")})`;
  }
  return [...new Set(names)];
}

/** Splits and validates policy text: its policies by id and the ids of the forbids, or its problem. */
function check(text: string, schema: string): FromWorker & { type: "checked" } {
  const split = cedar.policySetTextToParts(text);
  const problem = (p: string) => ({ type: "checked" as const, id: 0, problem: p });
  if (split.type === "failure") return problem(split.errors.map(describe).join("; "));
  if (split.policy_templates.length > 0)
    return problem("policy templates are not supported in a tool policy");
  const policies: Policies = {};
  const forbids: string[] = [];
  // permits annotated @approval("required"): a call they allow waits for a person's decision
  const asks: string[] = [];
  // @deciders("dana@example.com, editor") beside it: who may decide what that permit asks
  const deciders: Record<string, string[]> = {};
  for (const [i, p] of split.policies.entries()) {
    const json = cedar.policyToJson(p);
    if (json.type === "failure") return problem(json.errors.map(describe).join("; "));
    const id = json.json.annotations?.id ?? `policy${i}`;
    if (id in policies) return problem(`two policies have the id "${id}"`);
    policies[id] = p;
    if (json.json.effect === "forbid") forbids.push(id);
    const approval = json.json.annotations?.approval;
    if (approval !== undefined) {
      if (approval !== "required")
        return problem(
          `policy "${id}": @approval takes only "required" (a call it permits waits for a decision)`,
        );
      if (json.json.effect !== "permit")
        return problem(`policy "${id}": @approval("required") belongs on a permit, not a forbid`);
      asks.push(id);
    }
    const named = json.json.annotations?.deciders;
    if (named !== undefined && named !== null) {
      if (approval !== "required")
        return problem(`policy "${id}": @deciders belongs beside @approval("required") on a permit`);
      const list = decidersOf(named);
      if (typeof list === "string") return problem(`policy "${id}": @deciders ${list}`);
      deciders[id] = list;
    }
  }
  if (Object.keys(policies).length === 0)
    return { type: "checked", id: 0, problem: null, policies, forbids, asks, deciders };
  const answer = cedar.validate({
    schema,
    policies: { staticPolicies: policies },
    validationSettings: { mode: "strict" },
  });
  if (answer.type === "failure") return problem(answer.errors.map(describe).join("; "));
  if (answer.validationErrors.length > 0)
    return problem(answer.validationErrors.map((v) => describe(v.error)).join("; "));
  return { type: "checked", id: 0, problem: null, policies, forbids, asks, deciders };
}

/**
 * Cedar keeps preparsed policy sets by id for the life of the instance, with no way to drop
 * one: the sets share this many ids (the pool's number), the least recently used given up
 * first. The pool mirrors this order (it sends the messages in the order they are handled
 * here), so it knows when to send a set's policies again.
 */
const SLOTS = (workerData as { slots: number }).slots;
const slotOf = new Map<number, string>();
let nextSlot = 0;

function preparsed(key: number, policies: Policies | undefined): string | { missing: true } | string[] {
  const held = slotOf.get(key);
  if (policies === undefined) {
    if (held === undefined) return { missing: true };
    slotOf.delete(key);
    slotOf.set(key, held);
    return held;
  }
  let slot = held;
  if (slot !== undefined) slotOf.delete(key);
  else if (slotOf.size >= SLOTS) {
    const [oldKey, oldSlot] = slotOf.entries().next().value!;
    slotOf.delete(oldKey);
    slot = oldSlot;
  } else slot = `tool-policy-${nextSlot++}`;
  const done = cedar.preparsePolicySet(slot, { staticPolicies: policies });
  if (done.type === "failure") return done.errors.map(describe);
  slotOf.set(key, slot);
  return slot;
}

let broken = false;
let fault: "wasm" | "exit" | "hang" | null = null;

function handle(m: ToWorker): FromWorker | null {
  if (m.op === "fault") {
    fault = m.how;
    return null;
  }
  if (fault !== null) {
    const how = fault;
    fault = null;
    if (how === "exit") process.exit(70);
    if (how === "hang") for (;;);
    const e = new Error("memory access out of bounds (a test's fault)");
    e.name = "RuntimeError";
    throw e;
  }
  if (m.op === "check") return { ...check(m.text, m.schema), id: m.id };
  const slot = preparsed(m.key, m.policies);
  if (typeof slot === "object" && "missing" in slot) return { type: "missing", id: m.id };
  if (Array.isArray(slot)) return { type: "failed", id: m.id, errors: slot };
  const answer = cedar.statefulIsAuthorized({ ...m.request, preparsedPolicySetId: slot });
  if (answer.type === "failure") return { type: "failed", id: m.id, errors: answer.errors.map(describe) };
  const { decision, diagnostics } = answer.response;
  return {
    type: "decided",
    id: m.id,
    decision,
    reason: diagnostics.reason,
    errors: diagnostics.errors.map((e) => ({ policyId: e.policyId, message: describe(e.error) })),
  };
}

port.on("message", (m: ToWorker) => {
  if (broken) return; // the pool is replacing this worker; it answers what was left elsewhere
  try {
    const out = handle(m);
    if (out) send(out);
  } catch (err) {
    broken = true;
    const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    send({ type: "broken", id: m.id, message });
  }
});

send({ type: "ready" });
