// Entry point of a measurement worker thread: runs walk tasks sent by HomeMeter (measure.ts).

import { parentPort } from "node:worker_threads";
import { walk, WalkError, type InodeKey } from "./walk.js";

export type ToWorker = {
  type: "task";
  job: number;
  dirs: string[];
  root: string;
  dev: number;
  /** [0]: directories wanted by idle workers (a hint); [1]: non-zero once the job is abandoned. */
  signals: Int32Array;
};

export type FromWorker =
  | { type: "ready" }
  | { type: "give"; job: number; dirs: string[] }
  | { type: "done"; job: number; bytes: number; linked: Map<InodeKey, number>; skipped: number }
  | { type: "failed"; job: number; path: string; errno: string };

const port = parentPort;
if (port === null) throw new Error("measure-worker.ts runs only as a worker thread");

const send = (message: FromWorker): void => port.postMessage(message);

port.on("message", (task: ToWorker) => {
  const { job, signals } = task;
  try {
    const result = walk(task, {
      hungry: () => {
        const want = Atomics.load(signals, 0);
        return want > 0 && Atomics.compareExchange(signals, 0, want, want - 1) === want;
      },
      give: (dirs) => send({ type: "give", job, dirs }),
      aborted: () => Atomics.load(signals, 1) !== 0,
    });
    send({ type: "done", job, bytes: result.bytes, linked: result.linked, skipped: result.skipped });
  } catch (err) {
    if (!(err instanceof WalkError)) throw err;
    send({ type: "failed", job, path: err.path, errno: err.errno });
  }
});

send({ type: "ready" });
