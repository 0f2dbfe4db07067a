// Measuring a home: allocated blocks, hard links once, no links followed, one device only.
// The walk runs synchronously in a small pool of worker threads that share the directories
// between them, so the server's event loop only routes a few messages per measurement.
// Every measurement ends: one that is not done within its time limit fails with
// workspace.measure, and its workers (which may be stuck in a kernel call) are let go.

import fs from "node:fs/promises";
import { constants } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { WarrenError } from "../errors.js";
import type { FromWorker, ToWorker } from "./measure-worker.js";
import type { InodeKey } from "./walk.js";

export interface Measurement {
  /** Allocated bytes: the sum of st_blocks * 512, each inode once. */
  bytes: number;
  /** bytes in MiB, rounded up: a home holding one byte uses 1 MiB of its cap. */
  mib: number;
  /** Entries that could not be looked at (EACCES, EPERM, ENAMETOOLONG): skipped, not counted. */
  skipped: number;
}

const MIB = 1024 * 1024;

export function toMib(bytes: number): number {
  return Math.ceil(bytes / MIB);
}

function measureError(message: string, cause?: unknown): WarrenError {
  return new WarrenError(
    "workspace.measure",
    message,
    undefined,
    cause === undefined ? undefined : { cause },
  );
}

interface Root {
  path: string;
  dev: number;
  bytes: number;
}

/** The root must be a real directory (not a link): its canonical path, device and own blocks. */
async function openRoot(dir: string): Promise<Root> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "an error";
    const why = code === "ELOOP" ? "it is a link" : code === "ENOTDIR" ? "it is not a folder" : code;
    throw measureError(`the folder to measure cannot be opened (${why}); check that it exists`, err);
  }
  try {
    const st = await handle.stat();
    const path = await fs.readlink(`/proc/self/fd/${handle.fd}`);
    return { path, dev: st.dev, bytes: st.blocks * 512 };
  } catch (err) {
    throw measureError("the folder to measure cannot be read", err);
  } finally {
    await handle.close();
  }
}

function defaultThreads(): number {
  return Math.max(1, Math.min(4, os.availableParallelism()));
}

/** How long one measurement may take, from when its turn comes, unless told otherwise. */
export const MEASURE_TIMEOUT_MS = 120_000;

/** The longest delay setTimeout keeps (a longer one would fire at once). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

function checkTimeout(ms: number): number {
  if (!(ms > 0))
    throw new RangeError(`a measurement's time limit must be a positive number of ms, not ${ms}`);
  return Math.min(ms, MAX_TIMEOUT_MS);
}

/** Starts one measurement worker thread (measure-worker.ts). */
export function startWorker(): Worker {
  if (fileURLToPath(import.meta.url).endsWith(".ts")) {
    // Running from source (tests, the benchmark): worker threads do not inherit tsx's loader.
    const entry = JSON.stringify(new URL("./measure-worker.ts", import.meta.url).href);
    return new Worker(`import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${entry}); });`, {
      eval: true,
    });
  }
  return new Worker(new URL("./measure-worker.js", import.meta.url));
}

interface Job {
  id: number;
  root: Root;
  /** The workers this job runs on. */
  pool: Worker[];
  /** [0]: how many idle workers want directories (a hint the walkers read); [1]: abandoned. */
  signals: Int32Array;
  queue: string[];
  idle: Worker[];
  workers: number;
  bytes: number;
  linked: Map<InodeKey, number>;
  skipped: number;
  settle: (err?: WarrenError) => void;
}

export interface MeterOptions {
  /** Worker threads walking each measurement (default: the cores, at most 4). */
  threads?: number;
  /** How long one measurement may take, from when its turn comes (default MEASURE_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Starts one worker thread (default startWorker; tests give stand-ins that stall or die). */
  startWorker?: () => Worker;
}

/**
 * A pool of measurement workers, started on first use and kept (unreferenced while idle, so it
 * never holds the process open). Measurements run one at a time, in the order asked; each
 * settles within its time limit once its turn comes, so one stuck walk delays those behind it
 * by at most that limit and never holds them forever.
 */
export class HomeMeter {
  readonly #threads: number;
  readonly #timeoutMs: number;
  readonly #start: () => Worker;
  #workers: Worker[] | undefined;
  #job: Job | undefined;
  #jobs = 0;
  #tail: Promise<unknown> = Promise.resolve();
  /** Removes the meter's listeners from a worker (for a worker let go or closed). */
  readonly #detach = new WeakMap<Worker, () => void>();

  constructor(options: MeterOptions = {}) {
    this.#threads = Math.max(1, options.threads ?? defaultThreads());
    this.#timeoutMs = checkTimeout(options.timeoutMs ?? MEASURE_TIMEOUT_MS);
    this.#start = options.startWorker ?? startWorker;
  }

  /**
   * Measures dir; fails with workspace.measure when dir itself cannot be measured, when an entry
   * fails with an error other than vanishing or being unreadable (those are skipped), or when the measurement is not done within its
   * time limit (`timeoutMs`, counted from when its turn comes). It never ends with a partial size.
   */
  async measure(dir: string, options: { timeoutMs?: number } = {}): Promise<Measurement> {
    const timeoutMs = checkTimeout(options.timeoutMs ?? this.#timeoutMs);
    // (an async function runs up to its first await at once: the line is joined in call order)
    const run = this.#tail.then(() => this.#measure(dir, timeoutMs));
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** Starts the worker threads now, in line, so that the next measurement does not wait for them. */
  warm(): void {
    this.#tail = this.#tail.then(() => this.#pool()).catch(() => undefined);
  }

  async close(): Promise<void> {
    const workers = this.#workers ?? [];
    this.#workers = undefined;
    for (const w of workers) {
      this.#detach.get(w)?.();
      this.#detach.delete(w);
    }
    await Promise.all(workers.map((w) => w.terminate()));
  }

  /** One measurement, raced against its time limit. */
  async #measure(dir: string, timeoutMs: number): Promise<Measurement> {
    const limit = new AbortController();
    const expired = new Promise<never>((_, reject) => {
      limit.signal.addEventListener("abort", () => reject(limit.signal.reason as Error), { once: true });
    });
    const timer = setTimeout(() => {
      limit.abort(
        measureError(
          `the folder could not be measured within ${timeoutMs / 1000} s (a very large tree, or storage that does not answer); the measurement was abandoned`,
        ),
      );
    }, timeoutMs);
    const walked = this.#walk(dir, limit.signal);
    walked.catch(() => undefined); // once expired, its own late end is nobody's concern
    try {
      return await Promise.race([walked, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #walk(dir: string, limit: AbortSignal): Promise<Measurement> {
    const root = await openRoot(dir);
    // Once expired, a measurement touches nothing shared: the next one may be running already.
    limit.throwIfAborted();
    // Measurements run one at a time, so the pool is this measurement's from here on. It may be
    // stuck starting, or its threads stuck in a kernel call (storage that does not answer): on
    // expiry it is let go, never awaited, and the next measurement starts a fresh one.
    const letGo = (): void => {
      if (this.#workers !== undefined) this.#retire(this.#workers);
    };
    limit.addEventListener("abort", letGo, { once: true });
    try {
      const workers = await this.#pool();
      limit.throwIfAborted();
      return await this.#run(root, workers, limit);
    } finally {
      limit.removeEventListener("abort", letGo);
    }
  }

  /** Walks from root on the pool's workers; ends when all are idle with nothing queued. */
  async #run(root: Root, workers: Worker[], limit: AbortSignal): Promise<Measurement> {
    let stop: (() => void) | undefined;
    for (const w of workers) w.ref();
    try {
      const job = await new Promise<Job>((resolve, reject) => {
        let settled = false;
        const job: Job = {
          id: ++this.#jobs,
          root,
          pool: workers,
          signals: new Int32Array(new SharedArrayBuffer(8)),
          queue: [root.path],
          idle: [...workers],
          workers: workers.length,
          bytes: root.bytes,
          linked: new Map(),
          skipped: 0,
          settle: (err) => {
            if (settled) return;
            settled = true;
            Atomics.store(job.signals, 1, 1);
            if (this.#job === job) this.#job = undefined;
            if (err === undefined) resolve(job);
            else reject(err);
          },
        };
        stop = () => job.settle(limit.reason as WarrenError);
        limit.addEventListener("abort", stop, { once: true });
        this.#job = job;
        dispatch(job);
      });
      let bytes = job.bytes;
      for (const size of job.linked.values()) bytes += size;
      return { bytes, mib: toMib(bytes), skipped: job.skipped };
    } finally {
      if (stop !== undefined) limit.removeEventListener("abort", stop);
      for (const w of workers) w.unref();
    }
  }

  async #pool(): Promise<Worker[]> {
    if (this.#workers !== undefined) return this.#workers;
    const workers = Array.from({ length: this.#threads }, () => this.#start());
    this.#workers = workers;
    try {
      await Promise.all(workers.map((w) => this.#attach(w, workers)));
    } catch (err) {
      this.#retire(workers);
      throw measureError("the measurement workers did not start", err);
    }
    return workers;
  }

  /** Wires a worker to the current job of its pool; resolves once the worker reports ready. */
  #attach(worker: Worker, pool: Worker[]): Promise<void> {
    return new Promise((ready, failed) => {
      const broken = (err: Error): void => {
        failed(err);
        const job = this.#job;
        if (job?.pool === pool) job.settle(measureError(`a measurement worker failed: ${err.message}`, err));
        this.#retire(pool);
      };
      const exited = (code: number): void => broken(new Error(`it exited with code ${code}`));
      const onMessage = (message: FromWorker): void => {
        if (message.type === "ready") {
          ready();
          return;
        }
        const job = this.#job;
        if (job === undefined || job.id !== message.job) return; // a late answer for an abandoned job
        switch (message.type) {
          case "give":
            job.queue.push(...message.dirs);
            break;
          case "done":
            job.bytes += message.bytes;
            job.skipped += message.skipped;
            for (const [key, size] of message.linked) if (!job.linked.has(key)) job.linked.set(key, size);
            job.idle.push(worker);
            break;
          case "failed":
            job.settle(
              measureError(
                `the home could not be measured: ${message.errno} on one of its entries`,
                undefined,
              ),
            );
            return;
        }
        dispatch(job);
      };
      worker.on("error", broken);
      worker.on("exit", exited);
      worker.on("message", onMessage);
      this.#detach.set(worker, () => {
        worker.off("error", broken);
        worker.off("exit", exited);
        worker.off("message", onMessage);
      });
    });
  }

  /**
   * Lets a pool go: the meter stops listening to it and asks its threads to stop, without
   * waiting (a thread blocked in a kernel call stops only once that call returns).
   */
  #retire(pool: Worker[]): void {
    if (this.#workers === pool) this.#workers = undefined;
    for (const w of pool) {
      const detach = this.#detach.get(w);
      if (detach === undefined) continue; // let go already
      detach();
      this.#detach.delete(w);
      w.on("error", () => undefined); // a late error of a thread let go is of no interest
      w.unref();
      w.terminate().catch(() => undefined);
    }
  }
}

/** Hands queued directories to idle workers; settles the job once nothing is left anywhere. */
function dispatch(job: Job): void {
  while (job.idle.length > 0 && job.queue.length > 0) {
    const dirs = job.queue.splice(0, Math.ceil(job.queue.length / job.idle.length));
    const worker = job.idle.pop();
    const task: ToWorker = {
      type: "task",
      job: job.id,
      dirs,
      root: job.root.path,
      dev: job.root.dev,
      signals: job.signals,
    };
    worker?.postMessage(task);
  }
  Atomics.store(job.signals, 0, job.idle.length);
  if (job.queue.length === 0 && job.idle.length === job.workers) job.settle();
}

let shared: HomeMeter | undefined;

/**
 * Measures a folder with a process-wide HomeMeter (started on first use). Code that wants its
 * own pool size or to stop the workers creates a HomeMeter instead.
 */
export function measure(dir: string): Promise<Measurement> {
  shared ??= new HomeMeter();
  return shared.measure(dir);
}
