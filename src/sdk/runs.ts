// Runs: commands recorded by the server, started now and read, waited for or cancelled later.
import { TERMINAL_RUN_STATUSES } from "./lists.js";
import { WarrenApiError } from "./errors.js";
import { eventStream, type StreamEvent, type StreamOptions } from "./sse.js";
import { pause, seg, type RequestOptions, type Transport } from "./transport.js";
import type {
  List,
  Run,
  RunCreateRequest,
  RunEvent,
  RunEventsQuery,
  RunListQuery,
  RunStatus,
} from "./types.js";

export { TERMINAL_RUN_STATUSES };

/** True once a run has ended and will not change status again. */
export function isTerminalRunStatus(status: RunStatus): boolean {
  return (TERMINAL_RUN_STATUSES as readonly RunStatus[]).includes(status);
}

export interface WaitOptions extends RequestOptions {
  /** Give up (a `timeout` error) after this long. Default 600000 (10 minutes). */
  timeoutMs?: number;
  /** The first pause between polls; it grows to `maxIntervalMs`. Default 250. */
  intervalMs?: number;
  /** Default 2000. */
  maxIntervalMs?: number;
}

export class RunsApi {
  constructor(private readonly http: Transport) {}

  /** Starts a run of an agent; `kind` defaults to `"command"`. */
  create(agentId: string, body: RunCreateRequest, opts: RequestOptions = {}): Promise<Run> {
    return this.http.json("POST", `/api/agents/${seg(agentId)}/runs`, {
      ...opts,
      json: { kind: "command", ...body },
    });
  }
  /** An agent's runs, newest first. */
  list(agentId: string, query: RunListQuery = {}, opts: RequestOptions = {}): Promise<List<Run>> {
    return this.http.json("GET", `/api/agents/${seg(agentId)}/runs`, { ...opts, query: { ...query } });
  }
  get(id: string, opts: RequestOptions = {}): Promise<Run> {
    return this.http.json("GET", `/api/runs/${seg(id)}`, opts);
  }
  /** The run's trace (started, output, exit, measurement), oldest first. */
  events(id: string, query: RunEventsQuery = {}, opts: RequestOptions = {}): Promise<List<RunEvent>> {
    return this.http.json("GET", `/api/runs/${seg(id)}/events`, { ...opts, query: { ...query } });
  }
  /**
   * The run's events as they happen (server-sent events), from the first or after `opts.after`;
   * a dropped connection is opened again where it left off. It ends after the run's `exit`
   * event once the server closes the stream, or when the loop is left.
   */
  stream(id: string, opts: StreamOptions = {}): AsyncGenerator<StreamEvent, void> {
    let exited = false;
    return eventStream(this.http, `/api/runs/${seg(id)}/events`, {
      ...opts,
      seen: (e) => {
        if (e.type === "exit") exited = true;
      },
      over: () => exited,
    });
  }
  /** Stops a queued or running run (`run.not_cancellable` once it ended). */
  cancel(id: string, opts: RequestOptions = {}): Promise<Run> {
    return this.http.json("POST", `/api/runs/${seg(id)}/cancel`, opts);
  }

  /** Polls a run until its status is terminal and answers it then. */
  async wait(id: string, opts: WaitOptions = {}): Promise<Run> {
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const deadline = Date.now() + timeoutMs;
    let delay = Math.max(1, opts.intervalMs ?? 250);
    const maxPause = Math.max(delay, opts.maxIntervalMs ?? 2000);
    for (;;) {
      const run = await this.get(id, { signal: opts.signal });
      if (isTerminalRunStatus(run.status)) return run;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new WarrenApiError(
          0,
          "timeout",
          `run ${id} is still ${run.status} after ${timeoutMs} ms; wait longer or cancel it (warren runs cancel ${id})`,
        );
      }
      await pause(Math.min(delay, left), opts.signal);
      delay = Math.min(maxPause, delay * 2);
    }
  }
}
