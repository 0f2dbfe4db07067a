// Measuring a home: allocated blocks, hard links once, no links followed, one device only.
// The walk runs synchronously in a small pool of worker threads that share the directories
// between them, so the server's event loop only routes a few messages per measurement.

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

function startWorker(): Worker {
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
  /** [0]: how many idle workers want directories (a hint the walkers read); [1]: abandoned. */
  signals: Int32Array;
  queue: string[];
  idle: Worker[];
  workers: number;
  bytes: number;
  linked: Map<InodeKey, number>;
  settle: (err?: WarrenError) => void;
}

/**
 * A pool of measurement workers, started on first use and kept (unreferenced while idle, so it
 * never holds the process open). Measurements run one at a time, in the order asked.
 */
export class HomeMeter {
  readonly #threads: number;
  #workers: Worker[] | undefined;
  #job: Job | undefined;
  #jobs = 0;
  #tail: Promise<unknown> = Promise.resolve();

  constructor(options: { threads?: number } = {}) {
    this.#threads = Math.max(1, options.threads ?? defaultThreads());
  }

  /** Measures dir; fails with workspace.measure when dir itself cannot be measured. */
  measure(dir: string): Promise<Measurement> {
    const run = this.#tail.then(() => this.#measure(dir));
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    const workers = this.#workers ?? [];
    this.#workers = undefined;
    for (const w of workers) w.removeAllListeners("exit");
    await Promise.all(workers.map((w) => w.terminate()));
  }

  async #measure(dir: string): Promise<Measurement> {
    const root = await openRoot(dir);
    const workers = await this.#pool();
    for (const w of workers) w.ref();
    try {
      const job = await new Promise<Job>((resolve, reject) => {
        let settled = false;
        const job: Job = {
          id: ++this.#jobs,
          root,
          signals: new Int32Array(new SharedArrayBuffer(8)),
          queue: [root.path],
          idle: [...workers],
          workers: workers.length,
          bytes: root.bytes,
          linked: new Map(),
          settle: (err) => {
            if (settled) return;
            settled = true;
            Atomics.store(job.signals, 1, 1);
            if (this.#job === job) this.#job = undefined;
            if (err === undefined) resolve(job);
            else reject(err);
          },
        };
        this.#job = job;
        dispatch(job);
      });
      let bytes = job.bytes;
      for (const size of job.linked.values()) bytes += size;
      return { bytes, mib: toMib(bytes) };
    } finally {
      for (const w of workers) w.unref();
    }
  }

  async #pool(): Promise<Worker[]> {
    if (this.#workers !== undefined) return this.#workers;
    const workers = Array.from({ length: this.#threads }, startWorker);
    this.#workers = workers;
    try {
      await Promise.all(workers.map((w) => this.#attach(w, workers)));
    } catch (err) {
      await this.#discard(workers);
      throw measureError("the measurement workers did not start", err);
    }
    return workers;
  }

  /** Wires a worker to whichever job is current; resolves once the worker reports ready. */
  #attach(worker: Worker, pool: Worker[]): Promise<void> {
    return new Promise((ready, failed) => {
      const broken = (err: Error): void => {
        failed(err);
        this.#job?.settle(measureError(`a measurement worker failed: ${err.message}`, err));
        void this.#discard(pool);
      };
      worker.on("error", broken);
      worker.on("exit", (code) => broken(new Error(`it exited with code ${code}`)));
      worker.on("message", (message: FromWorker) => {
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
      });
    });
  }

  async #discard(pool: Worker[]): Promise<void> {
    if (this.#workers === pool) this.#workers = undefined;
    for (const w of pool) w.removeAllListeners("exit");
    await Promise.all(pool.map((w) => w.terminate()));
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
