// Reaching boxd in a machine's box: commands, terminals and forwarded ports, the box
// started first when it is not running, and started again once when it died on its own.
import type { Duplex } from "node:stream";
import { WarrenError } from "../errors.js";
import type {
  BoxExecRequest,
  BoxExecResult,
  BoxPtyRequest,
  ExecIo,
  PtyOptions,
  PtyStream,
} from "./exec-port.js";
import type { CommandOwner } from "./health.js";
import type { BoxLifecycle } from "./lifecycle.js";
import type { LiveBoxes } from "./live.js";
import { execTrace, monotonicUs } from "./trace.js";
import type { ExecTrace } from "../boxd/index.js";
import { metering, observeExec } from "../observability/telemetry.js";
import { inSpan, phaseSpans, tracing, type Phase } from "../observability/tracing.js";

/** boxd's marks of an exec as phases, between the runtime taking it and having its answer. */
function phasesOf(runtimeUs: number, t: ExecTrace, answeredUs: number): Phase[] {
  const marks: [string, number][] = [
    ["send", runtimeUs],
    ["limits", t.requestUs],
    ["spec", t.limitsUs],
    ["helper_read", t.specSentUs],
    ["privileges", t.specReadUs],
    ["landlock", t.privilegesUs],
    ["seccomp", t.landlockUs],
    ["command", t.seccompUs],
    ["answer", t.exitUs],
    ["receive", t.answerUs],
  ];
  return marks.map(([name, startUs], i) => ({ name, startUs, endUs: marks[i + 1]?.[1] ?? answeredUs }));
}

const outcomeOf = (r: BoxExecResult): string =>
  r.timedOut ? "timed_out" : r.cancelled ? "cancelled" : r.exitCode === 0 ? "ok" : "failed";

export class BoxdReach {
  constructor(
    private readonly live: LiveBoxes,
    private readonly lifecycle: BoxLifecycle,
  ) {}

  /** `once`, and once more when boxd was unreachable because its box died on its own. */
  async #retrying<T>(machineId: string, once: () => Promise<T>): Promise<T> {
    try {
      return await once();
    } catch (err) {
      // boxd unreachable before the command started: a box that died on its own (killed,
      // out of memory) is forgotten and started again, once
      if (!unreachable(err) || !(await this.lifecycle.forgetIfDead(machineId))) throw err;
      return once();
    }
  }

  /**
   * Runs a command in the machine's box, counting it as activity while it runs. `owner`
   * names who started it, so that a runaway tree is recorded against its agent and run.
   */
  exec(
    machineId: string,
    req: BoxExecRequest,
    io: ExecIo = {},
    owner?: CommandOwner,
  ): Promise<BoxExecResult> {
    const tracked: ExecIo = {
      ...io,
      onStart: (pid, cgroup) => {
        if (cgroup && owner) this.live.own(machineId, cgroup, owner);
        io.onStart?.(pid, cgroup);
      },
    };
    if (execTrace.enabled || tracing.on) return this.#traced(machineId, req, tracked);
    if (!metering()) return this.#retrying(machineId, () => this.#execOnce(machineId, req, tracked));
    const t0 = performance.now();
    return this.#retrying(machineId, () => this.#execOnce(machineId, req, tracked)).then((r) => {
      observeExec((performance.now() - t0) / 1000, outcomeOf(r));
      return r;
    });
  }

  /** An exec with boxd's phase times: for the bench's breakdown, and as child spans of its span. */
  #traced(machineId: string, req: BoxExecRequest, io: ExecIo): Promise<BoxExecResult> {
    return inSpan("box.exec", { "warren.machine.id": machineId }, async (span) => {
      const runtimeUs = monotonicUs();
      // boxd is asked for its phases only when they go somewhere (a span not sampled: not)
      const trace = execTrace.enabled || span.isRecording();
      const r = await this.#retrying(machineId, () => this.#execOnce(machineId, { ...req, trace }, io));
      const answeredUs = monotonicUs();
      if (execTrace.enabled) execTrace.last = { runtimeUs, ...(r.trace ? { box: r.trace } : {}), answeredUs };
      const outcome = outcomeOf(r);
      span.setAttributes({
        "warren.exec.outcome": outcome,
        ...(r.exitCode !== null ? { "process.exit.code": r.exitCode } : {}),
        ...(r.signal ? { "warren.exec.signal": r.signal } : {}),
      });
      if (r.trace) phaseSpans(span, phasesOf(runtimeUs, r.trace, answeredUs));
      observeExec((answeredUs - runtimeUs) / 1e6, outcome);
      const { trace: _trace, ...result } = r;
      return result;
    });
  }

  async #execOnce(machineId: string, req: BoxExecRequest, io: ExecIo): Promise<BoxExecResult> {
    const boxd = await this.lifecycle.ensure(machineId);
    const live = this.live.get(machineId);
    if (live) live.liveExecs++;
    try {
      return await boxd.exec(req, io);
    } finally {
      if (live) {
        live.liveExecs--;
        live.lastActivity = Date.now();
      }
    }
  }

  /**
   * Opens a terminal in the machine's box. The terminal is activity only when its user
   * types (`touch`): an idle terminal does not keep the box up.
   */
  pty(machineId: string, req: BoxPtyRequest, opts: PtyOptions): Promise<PtyStream> {
    return this.#retrying(machineId, async () => {
      const stream = await (await this.lifecycle.ensure(machineId)).pty(req, opts);
      const live = this.live.get(machineId);
      if (live) {
        live.openPtys = (live.openPtys ?? 0) + 1;
        const closed = () => void (live.openPtys = Math.max(0, (live.openPtys ?? 1) - 1));
        stream.exited.then(closed, closed);
      }
      return stream;
    });
  }

  forward(machineId: string, port: number): Promise<Duplex> {
    return this.#retrying(machineId, async () => {
      const boxd = await this.lifecycle.ensure(machineId);
      this.live.touch(machineId);
      return boxd.forward(port);
    });
  }
}

const unreachable = (e: unknown): boolean =>
  e instanceof WarrenError &&
  e.code === "box.unavailable" &&
  /cannot reach boxd|did not accept/.test(e.message);
