// The boxd protocol, shared by boxd (inside the box: native/boxd/, which follows
// this file) and BoxdClient (in the server).
//
// Transport: a stream socket (a unix socket under STATE_ROOT/run for the local
// provider; TCP for remote providers). One connection carries one stream: a ping, an
// exec, a forwarded TCP connection, a bridged one, a terminal, or a standing channel
// (agents' calls, bridges). Concurrency is many connections at once; each gets the kernel's own
// flow control, and closing a connection ends (cancels) what it carries.
//
// Framing, both directions:
//
//   +----------------+--------+-------------------+
//   | length: u32 BE | kind:u8| payload           |
//   +----------------+--------+-------------------+
//   length = 1 + payload bytes, at most MAX_FRAME_BYTES.
//
// kind 1 CONTROL: UTF-8 JSON, one of the typed messages below.
// kind 2 STDIN, 3 STDOUT, 4 STDERR: raw bytes of that stream.
// kind 5 DATA: raw bytes of a terminal (both ways), later of a bridge stream.
//
// A connection starts with one CONTROL frame from the client, an Open message (its
// `op` says what the stream is, `v` the protocol version). Then:
//
//   ping     boxd answers Pong and closes.
//   exec     boxd answers Started (or Error), then STDOUT/STDERR frames as output
//            arrives, then one Exit and closes. The client sends STDIN frames, then
//            StdinEof; Cancel (or closing the connection) kills the command's whole
//            process tree.
//   forward  boxd connects to 127.0.0.1:port inside the box and answers Forwarded (or
//            Error). After that frame the connection is a raw byte pipe both ways,
//            with half-close passed through.
//   calls    the server's standing channel for agents' calls (warren-secret in the box,
//            native/boxd/calls.h). boxd answers CallsReady, then sends a Call for each
//            request an agent's command makes on boxd's calls socket, with the uid the
//            kernel gave for that connection (the only identity: nothing the agent sends
//            names it); the server answers each with a Reply. A newer calls connection
//            takes over from an older one; calls waiting on a connection that ends are
//            answered "unavailable" to the agent.
//   bridges  the server's standing channel for bridges (native/boxd/bridge.h): boxd
//            listens on 127.0.0.1:port in the box for each bridge it was started with
//            (--bridge NAME=PORT); boxd answers BridgesReady, then sends a Bridge
//            {id, name, uid} for each connection accepted there, uid being the owner of
//            the connecting socket (the box's /proc/net/tcp; nothing the client sends).
//            A newer bridges connection takes over; connections waiting on one that ends
//            are closed.
//   bridge   the server claims the accepted connection `id` (within 10 s): boxd answers
//            Forwarded (or Error), and the connection is then a raw byte pipe to the
//            agent's socket, as with forward.
//   pty      boxd opens a pseudo-terminal of the given size and runs argv in it as the
//            agent, within the same walls as an exec (uid, no capabilities, seccomp,
//            Landlock, a cgroup of its own; native/boxd/pty.h), and answers Started (or
//            Error). Then DATA frames both ways: the terminal's output, the client's
//            input. The client sends Resize {cols, rows}, Signal {signal} (to the
//            terminal's foreground process group, as a key would) and Cancel (the whole
//            tree is killed, as closing the connection does). When the shell has exited
//            and its output is read, boxd answers one Exit (exec's shape) and closes.
//
// Field names are camelCase like the rest of warren's TypeScript; the HTTP layer maps
// them to its snake_case.

export const PROTOCOL_VERSION = 1;
export const MAX_FRAME_BYTES = 1024 * 1024;

export const FrameKind = {
  control: 1,
  stdin: 2,
  stdout: 3,
  stderr: 4,
  data: 5,
} as const;
export type FrameKind = (typeof FrameKind)[keyof typeof FrameKind];

export interface Frame {
  kind: FrameKind;
  payload: Buffer;
}

// ---- requests and results -------------------------------------------------------

export interface FileAccess {
  read: string[];
  write: string[];
}

/** At most this many paths in each list of a command's file access. */
export const MAX_FILE_RULES = 128;

/** At most this many folders a fenced command keeps of its home. */
export const MAX_FENCE_KEEP = 64;

export interface ExecLimits {
  /** Memory limit of this command's process tree, MiB (never above the box's). */
  memoryMib?: number;
  /** Process limit of this command's tree (never above the box's). */
  pids?: number;
}

/** What boxd needs to run one command. Environment is exactly `env`: nothing is inherited. */
export interface ExecSpec {
  argv: string[];
  env: Record<string, string>;
  /** Absolute path in the box; entered after dropping privileges. */
  cwd: string;
  uid: number;
  gid: number;
  /** Supplementary groups (e.g. the shared group of a trust: shared machine). */
  groups: number[];
  /** Kill the whole tree after this many ms; 0 = no limit. */
  timeoutMs: number;
  /** A path in the box mounted read-only at /agent for this command only. */
  agentDir?: string;
  /**
   * The command's own view of its home (a mount namespace of its own): with `keep`, only those
   * folders are on disk (the rest of the home is an empty tmpfs, each kept folder's top .git is
   * covered); without, the whole home; each `hide` folder (a repository's .git) is covered by
   * an empty read-only folder. `place`: the folder `from` (a conversation's worktree) is bound
   * at `at` (its repository's folder), so the repository's own working tree is not there for
   * the command (a missing `from` stops the command). Paths relative to `home`, at most
   * MAX_FENCE_KEEP in each list.
   */
  fence?: { home: string; keep?: string[]; hide?: string[]; place?: { from: string; at: string } };
  /** A path in the box mounted read-write at /workspace for this command only. */
  workspaceDir?: string;
  /** A folder of /opt/warren/contracts mounted read-only at /opt/warren/contracts/self (the agent's own flow's). */
  selfDir?: string;
  limits?: ExecLimits;
  /**
   * The command's file access, enforced with Landlock: folders (or files) it may read and
   * execute, and those it may also write, create in and remove from. Absent = not
   * restricted beyond the box's own walls.
   */
  files?: FileAccess;
  /**
   * TCP ports the command may listen on (and ephemeral ones), enforced with Landlock
   * where the kernel can (ABI 4); absent = any port.
   */
  bindPorts?: { first: number; last: number };
  /**
   * Walls the command off from the box's other agents (isolated machines): TCP
   * connections only to these port ranges (Landlock ABI 4), abstract unix sockets only
   * of its own processes (ABI 6). Refused, not skipped, on a kernel without them.
   */
  network?: { connect: { first: number; last: number }[] };
  /** Started by a generation: what it leaves running keeps the box from being idle. */
  generation?: boolean;
  /** The answer carries the exec's phase times (ExecTrace): for `make bench`, off by default. */
  trace?: boolean;
}

/**
 * When a traced exec passed each phase in the box, in µs of CLOCK_MONOTONIC (the clock
 * the server's process.hrtime shares): boxd took the request, wrote the command's limits,
 * gave the ready helper its options; the helper started (earlier: it was made ready
 * before), joined its cgroups, read its options, dropped its privileges and entered its
 * cwd, applied Landlock, loaded seccomp (then ran the command); boxd reaped the command
 * and answered.
 */
export interface ExecTrace {
  requestUs: number;
  limitsUs: number;
  specSentUs: number;
  helperStartUs: number;
  joinedUs: number;
  specReadUs: number;
  privilegesUs: number;
  landlockUs: number;
  seccompUs: number;
  exitUs: number;
  answerUs: number;
}

export interface ExecUsage {
  /** CPU time of the command's whole tree (cpuacct / cpu.stat), when available. */
  cpuSeconds: number | null;
  /** Peak memory of the command's tree (max_usage_in_bytes / memory.peak), when available. */
  peakMemoryBytes: number | null;
}

export interface ExecResult {
  /** Exit code, or null when a signal ended the command. */
  exitCode: number | null;
  /** Signal name (e.g. "SIGKILL") when a signal ended the command. */
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
  usage: ExecUsage;
  /** With ExecSpec.trace only. */
  trace?: ExecTrace;
  /** The connection was kept for another operation (an exec opened with `keep`). */
  kept?: boolean;
}

export interface PingResult {
  pid: number;
  /** boxd's resident memory (VmRSS: shared text of libc included). */
  rssBytes: number;
  /** boxd's private resident memory (RssAnon), what each more box costs. */
  anonBytes: number;
  /** boxd's proportional set size: private memory plus its share of libc. */
  pssBytes: number;
  uptimeMs: number;
  /** Commands running now. */
  execs: number;
  /** Processes alive in agents' cgroups (running commands and what they left behind). */
  processes: number;
  /** Of those, the processes that generations started (and may have left running). */
  generationProcesses: number;
  /**
   * The cgroup of boxd's ready helper ("" when none): not counted in `processes`. It may
   * run as the last command's agent already, its walls applied ahead of its command.
   */
  readyCgroup: string;
}

/**
 * A terminal: the walls and environment of an exec (no time limit, no /agent, never a
 * generation) and the terminal's size.
 */
export interface PtySpec extends Omit<ExecSpec, "timeoutMs" | "agentDir" | "generation" | "trace"> {
  cols: number;
  rows: number;
}

/** The most columns and rows a terminal may have. */
export const MAX_PTY_SIZE = 1000;

/** The signals a terminal's client may send to its foreground job. */
export const PTY_SIGNALS = [
  "SIGINT",
  "SIGQUIT",
  "SIGTERM",
  "SIGHUP",
  "SIGKILL",
  "SIGTSTP",
  "SIGCONT",
  "SIGUSR1",
  "SIGUSR2",
  "SIGWINCH",
] as const;
export type PtySignal = (typeof PTY_SIGNALS)[number];

// ---- control messages -------------------------------------------------------------

export type OpenMessage =
  | { v: number; op: "ping" }
  /**
   * `keep`: after the exit answer the connection takes another Open message, when boxd can
   * tell the client sent everything for this command (its answer then says `kept`).
   */
  | { v: number; op: "exec"; exec: ExecSpec; keep?: boolean }
  | { v: number; op: "forward"; port: number }
  /** A terminal (PTY) stream, DATA frames both ways. */
  | { v: number; op: "pty"; pty: PtySpec }
  /** The server's standing channel for bridged connections (BridgeMessage). */
  | { v: number; op: "bridges" }
  /** Claims a bridged connection that a BridgeMessage offered. */
  | { v: number; op: "bridge"; id: number }
  /** The server's standing channel for agents' calls. */
  | { v: number; op: "calls" };

export type ClientMessage =
  | { type: "stdin_eof" }
  | { type: "cancel" }
  /** pty streams: the terminal's new size. */
  | { type: "resize"; cols: number; rows: number }
  /** pty streams: a signal to the terminal's foreground process group. */
  | { type: "signal"; signal: PtySignal }
  /** The server's answer to a Call: the agent's command prints the text and exits with `exit`. */
  | CallReply;

export interface CallReply {
  type: "reply";
  id: number;
  /** warren-secret's exit code: 0 done, 1 refused, 2 bad usage, 69 unavailable. */
  exit: number;
  stdout?: string;
  stderr?: string;
}

/** A request of an agent's command, as boxd passes it (untrusted: see parseAgentCall). */
export interface CallMessage {
  type: "call";
  id: number;
  /** The caller's uid as boxd sees it (SO_PEERCRED): who calls. */
  uid: number;
  request: unknown;
}

/** What an agent's command may ask (warren-secret list | store NAME FILE). */
export type AgentCall = { op: "list" } | { op: "store"; name: string; path: string };

/** A connection accepted on a bridge's port in the box, offered on the bridges channel. */
export interface BridgeMessage {
  type: "bridge";
  id: number;
  /** The bridge's name (as boxd was started with it). */
  name: string;
  /** The uid owning the connecting socket, as boxd sees it: who connects. */
  uid: number;
}

export type ErrorCode = "invalid" | "unsupported" | "spawn_failed" | "forward_refused" | "internal";

export type ServerMessage =
  | ({ type: "pong" } & PingResult)
  /** `cgroup`: the name of the command's own cgroup under the agents' one. */
  | { type: "started"; pid: number; cgroup?: string }
  | ({ type: "exit" } & ExecResult)
  | { type: "forwarded" }
  | { type: "calls" }
  | CallMessage
  | { type: "bridges" }
  | BridgeMessage
  | { type: "error"; code: ErrorCode; message: string };

// ---- framing ---------------------------------------------------------------------

export function encodeFrame(kind: FrameKind, payload: Uint8Array | string): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  if (body.length + 1 > MAX_FRAME_BYTES)
    throw new ProtocolError(`frame of ${body.length} bytes is too large`);
  const head = Buffer.allocUnsafe(5);
  head.writeUInt32BE(body.length + 1, 0);
  head.writeUInt8(kind, 4);
  return Buffer.concat([head, body]);
}

export function encodeControl(message: OpenMessage | ClientMessage | ServerMessage): Buffer {
  return encodeFrame(FrameKind.control, JSON.stringify(message));
}

/** Splits data chunks into payloads (bytes > MAX_FRAME_BYTES are refused). */
export function* splitPayload(data: Buffer, max = MAX_FRAME_BYTES - 1): Generator<Buffer> {
  for (let at = 0; at < data.length; at += max) yield data.subarray(at, at + max);
}

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}

const KINDS = new Set<number>(Object.values(FrameKind));

/** Incremental decoder: push chunks, take complete frames. */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private size = 0;

  /** Adds a chunk and takes at most `max` complete frames; the rest stays buffered. */
  push(chunk: Buffer, max = Infinity): Frame[] {
    if (chunk.length) {
      this.chunks.push(chunk);
      this.size += chunk.length;
    }
    const frames: Frame[] = [];
    while (frames.length < max) {
      if (this.size < 4) break;
      const head = this.peek(5);
      const length = head.readUInt32BE(0);
      if (length < 1 || length > MAX_FRAME_BYTES) throw new ProtocolError(`bad frame length ${length}`);
      if (this.size < 4 + length) break;
      const all = this.take(4 + length);
      const kind = all.readUInt8(4);
      if (!KINDS.has(kind)) throw new ProtocolError(`unknown frame kind ${kind}`);
      frames.push({ kind: kind as FrameKind, payload: all.subarray(5) });
    }
    return frames;
  }

  /** Bytes received after the last complete frame (used when a stream turns raw). */
  rest(): Buffer {
    const out = Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    this.size = 0;
    return out;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0] && this.chunks[0].length >= n) return this.chunks[0];
    const joined = Buffer.concat(this.chunks, this.size);
    this.chunks = [joined];
    return joined;
  }

  private take(n: number): Buffer {
    const joined =
      this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size);
    const out = joined.subarray(0, n);
    const rest = joined.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.size = rest.length;
    return out;
  }
}
