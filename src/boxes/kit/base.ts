// What every provider is built on: its roots on the host (./dirs.ts), the homes' layout,
// one lock per box, the logger it was given, and how a box's boxd is reached by its state
// folder; and, for the providers whose boxes bind host files (local, oci), the users files
// and the commands' cgroups by the box's record. A provider adds how it runs boxes, and
// overrides what it does otherwise (kubernetes).
import path from "node:path";
import { BoxdClient } from "../../boxd/client.js";
import { WarrenError, notFound } from "../../errors.js";
import type { BoxEndpoint, BoxHandle, BoxState, HomeLayout, RunFilesDir } from "../types.js";
import { BoxDirs, providerRoots, type ProviderRoots } from "./dirs.js";
import { FsHomeLayout } from "./layout.js";
import { killCgroup } from "./cgroups.js";
import { KeyedLock } from "./lock.js";
import type { LoggerLike } from "./logger.js";
import { readBoxRecord, type BoxRecord } from "./record.js";
import { refreshBoxUsers } from "./users.js";
import { agentRuntimeDir } from "./runtime-dirs.js";

export interface ProviderBaseOptions extends ProviderRoots {
  /** Where the provider says what it did and what went wrong off the caller's path. */
  logger?: LoggerLike | undefined;
}

/** A logger that says nothing, for a provider given none. */
const silent: LoggerLike = { info: () => undefined, warn: () => undefined, error: () => undefined };

export abstract class ProviderBase {
  readonly homes: HomeLayout;
  /** The run root (STATE_ROOT/run unless given). */
  protected readonly runRoot: string;
  protected readonly dirs: BoxDirs;
  protected readonly locks = new KeyedLock();
  protected readonly logger: LoggerLike;

  /** `folder`: the boxes' state folders under the run root; `socket`: boxd's, in a box's folder. */
  constructor(o: ProviderBaseOptions, folder: string, socket?: string) {
    const { runRoot, workspacesRoot } = providerRoots(o);
    this.runRoot = runRoot;
    this.dirs = new BoxDirs(path.join(runRoot, folder), socket);
    this.homes = new FsHomeLayout(workspacesRoot);
    this.logger = o.logger ?? silent;
  }

  protected boxDir(id: string): string {
    return this.dirs.dir(id);
  }

  endpoint(id: string): Extract<BoxEndpoint, { kind: "unix" }> {
    return this.dirs.endpoint(id);
  }

  /** The box's boxd folder (bound at /run/boxd, box root's): a run's files go in runs/ there. */
  runFilesDir(id: string): RunFilesDir {
    return this.dirs.runFiles(id);
  }

  /** An agent's runtime folder on the host (/run/warren/<agent id> in the box; kit/runtime-dirs.ts). */
  runtimeDir(id: string, agentId: string): string | null {
    return agentRuntimeDir(this.boxDir(id), agentId);
  }

  /** A client for the box's boxd. */
  client(id: string): BoxdClient {
    return new BoxdClient(this.endpoint(id));
  }

  /** Whether the box's boxd answers a ping within `timeoutMs`. */
  protected answers(id: string, timeoutMs: number): Promise<boolean> {
    return this.client(id)
      .ping(timeoutMs)
      .then(
        () => true,
        () => false,
      );
  }

  /**
   * Pings the box's boxd at once (a thawed boxd counts the connection as its server's
   * contact); the function returned throws box.unavailable when it did not answer.
   */
  protected pingNow(id: string): () => Promise<void> {
    const answered = this.client(id)
      .ping(2000)
      .then(
        () => null,
        (err: unknown) => err,
      );
    return async () => {
      const err = await answered;
      if (err)
        throw new WarrenError("box.unavailable", `box ${id} did not answer after its resume`, undefined, {
          cause: err,
        });
    };
  }

  /**
   * Rewrites the box's /etc/passwd and /etc/group from the homes in the machine's folder
   * (each home owned by an agent uid is a user). In place: a running box sees it at once.
   */
  async refreshUsers(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      refreshBoxUsers(this.boxDir(id));
    });
  }

  /** Kills a command's tree by its cgroup (`agents/<name>` in each of the box's cgroups). */
  async killCommand(id: string, name: string): Promise<number> {
    if (!/^[A-Za-z0-9_.-]+$/.test(name) || name === "." || name === "..")
      throw new WarrenError("request.invalid", `bad command cgroup ${JSON.stringify(name)}`);
    const rec = readBoxRecord(this.boxDir(id));
    if (!rec) return 0;
    return killCgroup(rec.cgroupDirs.map((d) => path.join(d, "agents", name)));
  }

  /** The box's record; a box without one is not found. */
  protected recordOf(id: string): BoxRecord {
    const rec = readBoxRecord(this.boxDir(id));
    if (!rec) throw notFound(`box ${id}`);
    return rec;
  }

  /** What resume does with a box in state `now`: a paused one thawed, a running one as it is. */
  protected resumeFrom(
    id: string,
    now: BoxState | null,
    thaw: () => Promise<BoxHandle>,
    running: () => BoxHandle,
  ): Promise<BoxHandle> {
    if (now === "paused") return thaw();
    if (now === "running") return Promise.resolve(running());
    throw new WarrenError("box.unavailable", `box ${id} is not paused`);
  }

  /** A box's handle by its record: its pid (where the provider has one) and start time while it is up. */
  protected handleOf(rec: BoxRecord, state: BoxState, pid: number | null): BoxHandle {
    const up = state === "running" || state === "paused";
    return {
      id: rec.spec.id,
      labels: rec.spec.labels,
      state,
      endpoint: this.endpoint(rec.spec.id),
      pid: up ? pid : null,
      startedAt: up && rec.startedAt ? new Date(rec.startedAt) : null,
    };
  }
}
