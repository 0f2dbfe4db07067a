// One agent as an object: its commands, its home's files, its usage and its runs.
import { envelopeOf, WarrenApiError } from "./errors.js";
import { ndjson } from "./ndjson.js";
import { AgentConversations, AgentPersonas, ConversationsApi, PersonasApi } from "./conversations.js";
import { AgentSchedules, SchedulesApi } from "./schedules.js";
import type { RunsApi, WaitOptions } from "./runs.js";
import { AgentTerminal } from "./terminal.js";
import { AgentVersions } from "./versions.js";
import { homePath, seg, type RequestOptions, type Transport } from "./transport.js";
import type {
  EgressList,
  EgressListQuery,
  ExecExitEvent,
  ExecRequest,
  ExecResult,
  ExecStreamEvent,
  FolderListing,
  List,
  Run,
  RunCreateRequest,
  RunListQuery,
  Usage,
} from "./types.js";

/** The server's own limit on a command when the request gives none. */
const DEFAULT_EXEC_TIMEOUT_MS = 60_000;

/** What to run: argv as a list, shell text as a string, or the whole request. */
export type ExecCommand = readonly string[] | string | ExecRequest;

/** The rest of an exec request, when the command is given apart. */
export interface ExecOptions extends RequestOptions, Omit<ExecRequest, "argv" | "command"> {}

/** True for the last event of a streamed exec. */
export function isExecExit(event: ExecStreamEvent): event is ExecExitEvent {
  return !("stream" in event);
}

/** The request body for a command given as argv, shell text or a request. */
export function execBody(command: ExecCommand, opts: ExecOptions = {}): ExecRequest {
  const { signal: _signal, timeoutMs: _timeoutMs, ...rest } = opts;
  if (typeof command === "string") return { ...rest, command };
  if (isArgv(command)) return { ...rest, argv: [...command] };
  return { ...rest, ...command };
}

function isArgv(command: readonly string[] | ExecRequest): command is readonly string[] {
  return Array.isArray(command);
}

/** Checks one streamed line: output, the exit, or an error the server reported mid-stream. */
export function execEventOf(value: unknown): ExecStreamEvent {
  const env = envelopeOf(value);
  if (env) throw new WarrenApiError(0, env.code, env.message);
  if (typeof value === "object" && value !== null) {
    if (
      "stream" in value &&
      (value.stream === "stdout" || value.stream === "stderr") &&
      "data" in value &&
      typeof value.data === "string"
    ) {
      return { stream: value.stream, data: value.data };
    }
    if ("exit_code" in value && "timed_out" in value) return value as ExecExitEvent;
  }
  throw new WarrenApiError(
    0,
    "response.invalid",
    `an exec stream line is neither output nor an exit: ${JSON.stringify(value).slice(0, 120)}`,
  );
}

export class AgentFiles {
  constructor(
    private readonly http: Transport,
    private readonly agentId: string,
  ) {}

  /** A folder of the home (`""`: the home itself): names, kinds, sizes; links listed, not followed. */
  list(path = "", opts: RequestOptions = {}): Promise<FolderListing> {
    return this.http.json("GET", `/api/agents/${seg(this.agentId)}/folder`, { ...opts, query: { path } });
  }
  /** The bytes of a file in the agent's home (a path relative to the home, or under it). */
  read(path: string, opts: RequestOptions = {}): Promise<Uint8Array> {
    return this.http.bytes("GET", this.url(path), opts);
  }
  /** A file of the home as UTF-8 text. */
  async readText(path: string, opts: RequestOptions = {}): Promise<string> {
    return new TextDecoder("utf-8").decode(await this.read(path, opts));
  }
  /** Writes a file of the home (text is written as UTF-8). */
  write(path: string, data: Uint8Array | string, opts: RequestOptions = {}): Promise<void> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    return this.http.empty("PUT", this.url(path), { ...opts, bytes });
  }

  private url(path: string): string {
    return `/api/agents/${seg(this.agentId)}/files/${homePath(path)}`;
  }
}

export class AgentRuns {
  constructor(
    private readonly runs: RunsApi,
    private readonly agentId: string,
  ) {}

  /** Starts a run; wait for it with `client.runs.wait(run.id)`. */
  create(body: RunCreateRequest, opts: RequestOptions = {}): Promise<Run> {
    return this.runs.create(this.agentId, body, opts);
  }
  list(query: RunListQuery = {}, opts: RequestOptions = {}): Promise<List<Run>> {
    return this.runs.list(this.agentId, query, opts);
  }
}

/** What `agent.ask` answers: the agent's answer text and the run that made it. */
export interface AskAnswer {
  /** The answer (the run's output); empty when the run did not succeed. */
  text: string;
  /** The run, ended: its status says whether the answer is whole. */
  run: Run;
}

export class AgentHandle {
  readonly files: AgentFiles;
  readonly runs: AgentRuns;
  /** The agent's terminal: start it, connect to its WebSocket. */
  readonly terminal: AgentTerminal;
  /** Threads of turns with the agent: start one, post messages, follow its events. */
  readonly conversations: AgentConversations;
  /** Narrowings of the agent that a conversation may be started as. */
  readonly personas: AgentPersonas;
  /** Its versions, canary and evaluations. */
  readonly versions: AgentVersions;
  /** Standing orders to run the agent. */
  readonly schedules: AgentSchedules;
  readonly #runs: RunsApi;

  constructor(
    private readonly http: Transport,
    readonly id: string,
    runs: RunsApi,
  ) {
    this.files = new AgentFiles(http, id);
    this.runs = new AgentRuns(runs, id);
    this.#runs = runs;
    this.terminal = new AgentTerminal(http, id);
    this.conversations = new AgentConversations(new ConversationsApi(http), id);
    this.personas = new AgentPersonas(new PersonasApi(http), id);
    this.versions = new AgentVersions(http, id);
    this.schedules = new AgentSchedules(new SchedulesApi(http), id);
  }

  /**
   * Asks the agent once: a run of the agent by its kind on `text`, waited for. Answers its text
   * and the run (a run that did not succeed answers its status, not an error).
   */
  async ask(text: string, opts: WaitOptions = {}): Promise<AskAnswer> {
    const started = await this.#runs.create(this.id, { kind: "agent", input: text }, { signal: opts.signal });
    const run = await this.#runs.wait(started.id, opts);
    return { text: run.status === "succeeded" ? run.output : "", run };
  }

  /** Runs a command in the agent's box as the agent and answers once it ended, with its output. */
  exec(command: ExecCommand, opts: ExecOptions = {}): Promise<ExecResult> {
    const body = execBody(command, opts);
    // A buffered answer begins only when the command ended: wait for its own time limit and more.
    const timeoutMs = opts.timeoutMs ?? (body.timeout_ms ?? DEFAULT_EXEC_TIMEOUT_MS) + 30_000;
    return this.http.json("POST", this.execUrl(), { signal: opts.signal, timeoutMs, json: body });
  }

  /**
   * Runs a command and yields its output as it arrives, then the exit event last.
   * Leaving the loop early closes the request, which stops the command.
   */
  async *execStream(
    command: ExecCommand,
    opts: ExecOptions = {},
  ): AsyncGenerator<ExecStreamEvent, void, undefined> {
    const res = await this.http.send("POST", this.execUrl(), {
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
      json: execBody(command, opts),
      accept: "application/x-ndjson",
    });
    if (!res.body) throw new WarrenApiError(res.status, "response.invalid", "the exec answer has no body");
    let exited = false;
    for await (const value of ndjson(res.body)) {
      const event = execEventOf(value);
      yield event;
      if (isExecExit(event)) exited = true;
    }
    if (!exited)
      throw new WarrenApiError(
        0,
        "stream.incomplete",
        "the exec stream ended before the command's exit; the server may have stopped",
      );
  }

  /** How much disk the home and its machine use. */
  usage(opts: RequestOptions = {}): Promise<Usage> {
    return this.http.json("GET", `/api/agents/${seg(this.id)}/usage`, opts);
  }

  /** The agent's egress decisions, newest first; pass `next` as `before` for the next page. */
  egress(query: EgressListQuery = {}, opts: RequestOptions = {}): Promise<EgressList> {
    return this.http.json("GET", `/api/agents/${seg(this.id)}/egress`, { ...opts, query: { ...query } });
  }

  private execUrl(): string {
    return `/api/agents/${seg(this.id)}/exec`;
  }
}
