// Cedar where a failure cannot reach another tenant: cedar-wasm runs in worker threads
// (cedar-worker.ts), each handling one message at a time. A worker whose instance throws (a
// WebAssembly RuntimeError such as a stack overflow), that stops, or that takes longer than
// its time on one message is ended and replaced. Only the message it was handling fails (a
// check answers a problem, a decision denies); the messages queued behind it are sent again
// to a sound worker, so another organisation's checks and decisions go on as if nothing
// happened.
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import type { FromWorker, ToWorker } from "./cedar-worker.js";

/** The policies of a set by id, and which of them are forbids. */
export interface CheckedPolicies {
  policies: Record<string, string>;
  forbids: string[];
  /** The permits annotated `@approval("required")`: a call they allow waits for a decision. */
  asks: string[];
  /** Of the asking permits that name them (`@deciders`): who may decide, emails or roles. */
  deciders: Record<string, string[]>;
}

/** A check's answer: the policy set, or why the text is not one. */
export type Checked =
  | ({ problem: null } & CheckedPolicies)
  /** `failure`: the worker failed on the text (it broke, stopped or took too long). */
  | { problem: string; failure?: true };

export interface CedarRequest {
  principal: cedar.EntityUidJson;
  action: cedar.EntityUidJson;
  resource: cedar.EntityUidJson;
  context: Record<string, cedar.CedarValueJson>;
  entities: cedar.EntityJson[];
}

/** A decision's answer: Cedar's, or the errors that kept it from deciding (which deny). */
export type Decided =
  | {
      decision: "allow" | "deny";
      reason: string[];
      errors: { policyId: string; message: string }[];
    }
  | { failed: string[] };

/** A policy set handed to decide: its key (unique in the process) and its policies. */
export interface PolicySetRef {
  key: number;
  policies: Record<string, string>;
}

export interface CedarEngineOptions {
  /** How many workers (default 2). */
  workers?: number;
  /** The longest one message may take in a worker before the worker is replaced (default 10 s). */
  timeoutMs?: number;
}

/** How many preparsed policy sets a worker holds (the least recently used given up first). */
const SLOTS = 256;
/** Policy set keys: unique in the process, so workers never confuse two sets. */
let nextKey = 1;
export const newPolicySetKey = (): number => nextKey++;

type Answer = Exclude<FromWorker, { type: "ready" }>;
type Message = Extract<ToWorker, { op: "check" } | { op: "decide" }>;

interface Pending {
  message: Message;
  /** The set's policies, sent with a decide when its worker may not hold them. */
  set?: PolicySetRef;
  settle: (a: Answer | { type: "engine"; message: string }) => void;
}

function startWorker(): Worker {
  const workerData = { slots: SLOTS };
  if (fileURLToPath(import.meta.url).endsWith(".ts")) {
    // Running from source (tests, the benchmark): worker threads do not inherit tsx's loader.
    const entry = JSON.stringify(new URL("./cedar-worker.ts", import.meta.url).href);
    return new Worker(`import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${entry}); });`, {
      eval: true,
      workerData,
    });
  }
  return new Worker(new URL("./cedar-worker.js", import.meta.url), { workerData });
}

class CedarWorker {
  readonly worker = startWorker();
  ready = false;
  /** What was sent and not answered yet, in the order sent (the worker handles them so). */
  readonly queue: Pending[] = [];
  /** The sets this worker holds preparsed, least recently used first (mirrors the worker). */
  readonly held = new Map<number, true>();
  gone = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly onAnswer: (w: CedarWorker, a: FromWorker) => void,
    private readonly onDown: (w: CedarWorker, why: string, culprit: boolean) => void,
  ) {
    this.worker.unref();
    this.worker.on("message", (a: FromWorker) => this.onAnswer(this, a));
    this.worker.on("error", (err) => this.onDown(this, `the worker failed: ${err.message}`, this.ready));
    this.worker.on("exit", (code) => this.onDown(this, `the worker stopped (exit code ${code})`, this.ready));
  }

  send(p: Pending): void {
    let message: ToWorker = p.message;
    if (p.set) {
      const { key } = p.set;
      if (this.held.has(key)) {
        this.held.delete(key);
        this.held.set(key, true);
      } else {
        this.held.set(key, true);
        if (this.held.size > SLOTS) this.held.delete(this.held.keys().next().value!);
        message = { ...(message as Extract<ToWorker, { op: "decide" }>), policies: p.set.policies };
      }
    }
    this.queue.push(p);
    if (this.queue.length === 1) {
      this.worker.ref(); // an answer is awaited: the process waits for it
      this.#arm();
    }
    this.worker.postMessage(message);
  }

  /** The first unanswered message, taken off the queue. */
  shift(): Pending | undefined {
    const p = this.queue.shift();
    this.#arm();
    if (this.queue.length === 0) this.worker.unref();
    return p;
  }

  /** Times the message at the head of the queue (once the worker is up). */
  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.ready || this.gone || this.queue.length === 0) return;
    this.#timer = setTimeout(
      () => this.onDown(this, `it took more than ${this.timeoutMs} ms`, true),
      this.timeoutMs,
    );
    this.#timer.unref();
  }

  up(): void {
    this.ready = true;
    this.#arm();
  }

  end(): void {
    this.gone = true;
    clearTimeout(this.#timer);
    this.worker.removeAllListeners("message");
    void this.worker.terminate().catch(() => {});
  }
}

/** A pool of Cedar workers; see the top of this file. */
export class CedarEngine {
  readonly #size: number;
  readonly #timeoutMs: number;
  #workers: CedarWorker[] = [];
  #nextId = 1;
  /** Workers replaced after a failure (for tests and the log). */
  replaced = 0;

  constructor(o: CedarEngineOptions = {}) {
    this.#size = Math.max(1, o.workers ?? 2);
    this.#timeoutMs = o.timeoutMs ?? 10_000;
  }

  /** Splits and validates policy text against a schema. A failing worker answers a problem. */
  async check(text: string, schema: string): Promise<Checked> {
    const a = await this.#ask({ id: this.#nextId++, op: "check", text, schema });
    if (a.type === "engine")
      return {
        problem: `Cedar failed on this policy (${a.message}); make it smaller or simpler`,
        failure: true,
      };
    if (a.type !== "checked") return { problem: `Cedar answered ${a.type} to a check` };
    return a.problem === null
      ? { problem: null, policies: a.policies, forbids: a.forbids, asks: a.asks, deciders: a.deciders }
      : a;
  }

  /** Decides a request by a policy set. A failing worker answers the failure (which denies). */
  async decide(set: PolicySetRef, request: CedarRequest): Promise<Decided> {
    const message: Message = { id: this.#nextId++, op: "decide", key: set.key, request };
    const a = await this.#ask(message, set);
    if (a.type === "engine")
      return { failed: [`Cedar failed while deciding this call and was restarted (${a.message})`] };
    if (a.type === "failed") return { failed: a.errors };
    if (a.type !== "decided") return { failed: [`Cedar answered ${a.type} to a decision`] };
    return { decision: a.decision, reason: a.reason, errors: a.errors };
  }

  /** Tests only (nothing the API reaches calls it): the next message breaks its worker. */
  faultNext(how: "wasm" | "exit" | "hang"): void {
    this.#pick().worker.postMessage({ id: 0, op: "fault", how } satisfies ToWorker);
  }

  /** Ends every worker (a test's own engine). */
  async close(): Promise<void> {
    const all = this.#workers;
    this.#workers = [];
    for (const w of all) {
      w.end();
      for (const p of w.queue.splice(0)) p.settle({ type: "engine", message: "the engine was closed" });
    }
  }

  #ask(message: Message, set?: PolicySetRef): Promise<Answer | { type: "engine"; message: string }> {
    return new Promise((settle) => this.#pick().send({ message, ...(set ? { set } : {}), settle }));
  }

  /** The worker with the fewest messages waiting, a new one while the pool is not full. */
  #pick(): CedarWorker {
    let best: CedarWorker | undefined;
    for (const w of this.#workers) if (!best || w.queue.length < best.queue.length) best = w;
    if (best && (best.queue.length === 0 || this.#workers.length >= this.#size)) return best;
    const w = new CedarWorker(
      this.#timeoutMs,
      (from, a) => this.#answer(from, a),
      (from, why, culprit) => this.#down(from, why, culprit),
    );
    this.#workers.push(w);
    return w;
  }

  #answer(w: CedarWorker, a: FromWorker): void {
    if (w.gone) return;
    if (a.type === "ready") return w.up();
    if (a.type === "broken") return this.#down(w, a.message, true);
    const p = w.shift();
    if (!p) return;
    if (a.type === "missing" && p.set) {
      // the worker gave the set up: sent again with its policies
      w.held.delete(p.set.key);
      return w.send(p);
    }
    p.settle(a);
  }

  /**
   * A worker failed: it is ended; the message it was handling (the first unanswered, when
   * `culprit`) fails, and the others go to sound workers. A worker that never came up fails
   * everything sent to it (no one message is to blame), and the next message starts another.
   */
  #down(w: CedarWorker, why: string, culprit: boolean): void {
    if (w.gone) return;
    w.end();
    this.#workers = this.#workers.filter((x) => x !== w);
    this.replaced++;
    const waiting = w.queue.splice(0);
    if (!culprit) {
      for (const p of waiting) p.settle({ type: "engine", message: why });
      return;
    }
    waiting.shift()?.settle({ type: "engine", message: why });
    for (const p of waiting) this.#pick().send(p);
  }
}

/** The process's engine, shared by every organisation's checks and decisions. */
export const sharedCedar = new CedarEngine();
