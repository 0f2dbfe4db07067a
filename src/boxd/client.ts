// The server's side of the boxd protocol (see protocol.ts; boxd itself is
// native/boxd/). One connection per operation, so any number of execs and
// forwards run at once over one client.

import net from "node:net";
import type { Duplex } from "node:stream";
import { WarrenError } from "../errors.js";
import type { BoxdEndpoint } from "./endpoint.js";
import {
  FrameDecoder,
  FrameKind,
  PROTOCOL_VERSION,
  encodeControl,
  encodeFrame,
  parseExecSpec,
  parsePtySpec,
  parseServerMessage,
  ProtocolError,
  splitPayload,
  type BridgeMessage,
  type CallMessage,
  type CallReply,
  type ExecResult,
  type ExecSpec,
  type OpenMessage,
  type PingResult,
  type PtySignal,
  type PtySpec,
  type ServerMessage,
} from "./protocol.js";

/** An exec as callers give it: the protocol's ExecSpec with defaults and initial stdin. */
export interface ExecRequest extends Omit<ExecSpec, "groups" | "timeoutMs" | "env"> {
  env?: Record<string, string>;
  groups?: number[];
  /** 0 or absent: no time limit. */
  timeoutMs?: number;
  /** Bytes written to the command's stdin before it is closed (unless stdin streams). */
  stdin?: string | Uint8Array;
}

export interface ExecOptions {
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  /** Called once boxd has spawned the command (pid in the box, its cgroup's name). */
  onStart?: (pid: number, cgroup: string | undefined) => void;
  /** Aborting cancels the command: boxd kills its whole process tree. */
  signal?: AbortSignal;
  /** Streams stdin after `request.stdin`; stdin closes when it ends. */
  stdinStream?: AsyncIterable<Uint8Array | string>;
}

/** ExecResult plus the output that no callback took (empty for a stream with a callback). */
export interface ExecOutcome extends ExecResult {
  stdout: Buffer;
  stderr: Buffer;
}

export interface BoxdClientOptions {
  /** How long to wait for the connection to boxd. */
  connectTimeoutMs?: number;
}

function unavailable(message: string, cause?: unknown): WarrenError {
  return new WarrenError("box.unavailable", message, undefined, cause === undefined ? undefined : { cause });
}

/** boxd's `error` answer to starting a command or a terminal: what it refused, or why it could not. */
function startRefused(what: "command" | "terminal", m: { code: string; message: string }): WarrenError {
  if (m.code === "invalid")
    return new WarrenError("request.invalid", `boxd refused the ${what}: ${m.message}`);
  const doing = what === "command" ? "run the command" : "start the terminal";
  return unavailable(`boxd could not ${doing}: ${m.message}`);
}

export class BoxdClient {
  private readonly endpoint: BoxdEndpoint;
  private readonly connectTimeoutMs: number;

  constructor(endpoint: BoxdEndpoint | string, options: BoxdClientOptions = {}) {
    this.endpoint = typeof endpoint === "string" ? { kind: "unix", path: endpoint } : endpoint;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  }

  private connect(open: OpenMessage): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
      const sock =
        this.endpoint.kind === "unix"
          ? net.connect({ path: this.endpoint.path, allowHalfOpen: true })
          : net.connect({ host: this.endpoint.host, port: this.endpoint.port, allowHalfOpen: true });
      const timer = setTimeout(() => {
        sock.destroy();
        reject(unavailable(`boxd did not accept a connection within ${this.connectTimeoutMs} ms`));
      }, this.connectTimeoutMs);
      sock.once("error", (err) => {
        clearTimeout(timer);
        reject(unavailable(`cannot reach boxd: ${err.message}; start the box first`, err));
      });
      sock.once("connect", () => {
        clearTimeout(timer);
        sock.removeAllListeners("error");
        sock.write(encodeControl(open));
        resolve(sock);
      });
    });
  }

  /** boxd's pid, memory and uptime; rejects with box.unavailable when boxd does not answer. */
  async ping(timeoutMs = 2000): Promise<PingResult> {
    const sock = await this.connect({ v: PROTOCOL_VERSION, op: "ping" });
    return new Promise((resolve, reject) => {
      const decoder = new FrameDecoder();
      const timer = setTimeout(() => {
        sock.destroy();
        reject(unavailable(`boxd did not answer a ping within ${timeoutMs} ms`));
      }, timeoutMs);
      sock.on("data", (chunk: Buffer) => {
        try {
          for (const frame of decoder.push(chunk)) {
            if (frame.kind !== FrameKind.control) continue;
            const message = parseServerMessage(frame.payload);
            clearTimeout(timer);
            sock.destroy();
            if (message.type === "pong") {
              const { type: _type, ...ping } = message;
              resolve(ping);
            } else reject(unavailable(`boxd answered a ping with ${message.type}`));
            return;
          }
        } catch (err) {
          clearTimeout(timer);
          sock.destroy();
          reject(unavailable(`boxd sent a bad frame: ${(err as Error).message}`, err));
        }
      });
      sock.on("error", (err) => {
        clearTimeout(timer);
        reject(unavailable(`boxd connection failed: ${err.message}`, err));
      });
      sock.on("close", () => {
        clearTimeout(timer);
        reject(unavailable("boxd closed the connection without answering"));
      });
    });
  }

  /**
   * Runs a command in the box and resolves when it ended (or was killed). Rejects with
   * box.unavailable if boxd goes away, and with request.invalid if boxd refuses the
   * request. Output goes to the callbacks as it arrives, or is collected in the outcome.
   */
  async exec(request: ExecRequest, options: ExecOptions = {}): Promise<ExecOutcome> {
    const { stdin, env, groups, timeoutMs, ...rest } = request;
    let spec: ExecSpec;
    try {
      spec = parseExecSpec({ ...rest, env: env ?? {}, groups: groups ?? [], timeoutMs: timeoutMs ?? 0 });
    } catch (err) {
      if (err instanceof ProtocolError) throw new WarrenError("request.invalid", err.message);
      throw err;
    }
    if (options.signal?.aborted)
      throw new WarrenError("request.invalid", "the exec was cancelled before it started");
    const sock = await this.connect({ v: PROTOCOL_VERSION, op: "exec", exec: spec });
    const initial =
      typeof stdin === "string" ? Buffer.from(stdin, "utf8") : stdin ? Buffer.from(stdin) : null;
    if (initial) for (const part of splitPayload(initial)) sock.write(encodeFrame(FrameKind.stdin, part));
    if (!options.stdinStream) sock.write(encodeControl({ type: "stdin_eof" }));

    return new Promise<ExecOutcome>((resolve, reject) => {
      const decoder = new FrameDecoder();
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let settled = false;
      const done = (err: Error | null, result?: ExecResult): void => {
        if (settled) return;
        settled = true;
        options.signal?.removeEventListener("abort", onAbort);
        sock.destroy();
        if (err) reject(err);
        else if (result) resolve({ ...result, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) });
      };
      const onAbort = (): void => {
        if (!sock.destroyed) sock.write(encodeControl({ type: "cancel" }));
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      // aborted while the connection was being made: the event has fired already
      if (options.signal?.aborted) onAbort();

      const handle = (message: ServerMessage): void => {
        switch (message.type) {
          case "started":
            options.onStart?.(message.pid, message.cgroup);
            return;
          case "exit": {
            const { type: _type, ...result } = message;
            done(null, result);
            return;
          }
          case "error":
            done(startRefused("command", message));
            return;
          case "pong":
          case "forwarded":
          case "calls":
          case "call":
          case "bridges":
          case "bridge":
            done(unavailable(`boxd answered an exec with ${message.type}`));
            return;
        }
      };

      sock.on("data", (chunk: Buffer) => {
        let frames;
        try {
          frames = decoder.push(chunk);
        } catch (err) {
          done(unavailable(`boxd sent a bad frame: ${(err as Error).message}`, err));
          return;
        }
        for (const frame of frames) {
          switch (frame.kind) {
            case FrameKind.stdout:
              if (options.onStdout) options.onStdout(frame.payload);
              else stdout.push(frame.payload);
              break;
            case FrameKind.stderr:
              if (options.onStderr) options.onStderr(frame.payload);
              else stderr.push(frame.payload);
              break;
            case FrameKind.control:
              try {
                handle(parseServerMessage(frame.payload));
              } catch (err) {
                done(unavailable(`boxd sent a bad message: ${(err as Error).message}`, err));
              }
              break;
            case FrameKind.stdin:
            case FrameKind.data:
              break;
          }
        }
      });
      sock.on("error", (err) => done(unavailable(`the connection to boxd failed: ${err.message}`, err)));
      sock.on("close", () =>
        done(unavailable("boxd closed the connection before the command ended (the box stopped?)")),
      );

      if (options.stdinStream) {
        const source = options.stdinStream;
        void (async () => {
          try {
            for await (const chunk of source) {
              if (settled) return;
              const buf = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk);
              for (const part of splitPayload(buf)) {
                if (!sock.write(encodeFrame(FrameKind.stdin, part)))
                  await new Promise((r) => sock.once("drain", r));
              }
            }
          } catch {
            // the source failed: close stdin as if it ended
          }
          if (!settled && !sock.destroyed) sock.write(encodeControl({ type: "stdin_eof" }));
        })();
      }
    });
  }

  /**
   * Opens a terminal: resolves once boxd has started its shell (rejects with
   * request.invalid when boxd refuses the request, box.unavailable when it cannot start it).
   */
  async pty(spec: PtySpec, options: PtyOptions): Promise<PtyStream> {
    let checked: PtySpec;
    try {
      checked = parsePtySpec(spec);
    } catch (err) {
      if (err instanceof ProtocolError) throw new WarrenError("request.invalid", err.message);
      throw err;
    }
    const sock = await this.connect({ v: PROTOCOL_VERSION, op: "pty", pty: checked });
    const decoder = new FrameDecoder();
    let settle: { resolve: (r: ExecResult) => void; reject: (e: Error) => void } | undefined;
    const exited = new Promise<ExecResult>((resolve, reject) => (settle = { resolve, reject }));
    exited.catch(() => {}); // a caller that never waits does not make it unhandled
    let started: ((s: PtyStream) => void) | undefined;
    let refused: ((e: Error) => void) | undefined;
    const opened = new Promise<PtyStream>((resolve, reject) => ((started = resolve), (refused = reject)));
    let done = false;
    const finish = (err: Error | null, result?: ExecResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      if (started) refused?.(err ?? unavailable("boxd ended the terminal as it started"));
      if (err) settle?.reject(err);
      else if (result) settle?.resolve(result);
    };
    const timeoutMs = options.timeoutMs ?? 10_000;
    const timer = setTimeout(
      () => finish(unavailable(`boxd did not start the terminal within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const control = (m: Parameters<typeof encodeControl>[0]): void => {
      if (!sock.destroyed) sock.write(encodeControl(m));
    };
    const onMessage = (message: ServerMessage): void => {
      switch (message.type) {
        case "started": {
          clearTimeout(timer);
          const open = started;
          started = undefined;
          open?.({
            pid: message.pid,
            cgroup: message.cgroup,
            write: (data) => {
              if (sock.destroyed) return true;
              let ok = true;
              for (const part of splitPayload(Buffer.from(data)))
                ok = sock.write(encodeFrame(FrameKind.data, part)) && ok;
              return ok;
            },
            get pending() {
              return sock.writableLength;
            },
            onDrain: (fn) => void sock.on("drain", fn),
            resize: (cols, rows) => control({ type: "resize", cols, rows }),
            signal: (signal) => control({ type: "signal", signal }),
            cancel: () => control({ type: "cancel" }),
            pause: () => void sock.pause(),
            resume: () => void sock.resume(),
            exited,
          });
          return;
        }
        case "exit": {
          const { type: _type, ...result } = message;
          finish(null, result);
          return;
        }
        case "error":
          finish(startRefused("terminal", message));
          return;
        case "pong":
        case "forwarded":
        case "calls":
        case "call":
        case "bridges":
        case "bridge":
          finish(unavailable(`boxd answered a terminal with ${message.type}`));
          return;
      }
    };
    sock.on("data", (chunk: Buffer) => {
      let frames;
      try {
        frames = decoder.push(chunk);
      } catch (err) {
        finish(unavailable(`boxd sent a bad frame: ${(err as Error).message}`, err));
        return;
      }
      for (const frame of frames) {
        if (done) return;
        if (frame.kind === FrameKind.data) options.onData(frame.payload);
        else if (frame.kind === FrameKind.control) {
          try {
            onMessage(parseServerMessage(frame.payload));
          } catch (err) {
            finish(unavailable(`boxd sent a bad message: ${(err as Error).message}`, err));
          }
        }
      }
    });
    sock.on("error", (err) => finish(unavailable(`the connection to boxd failed: ${err.message}`, err)));
    sock.on("close", () =>
      finish(unavailable("boxd closed the terminal's connection before its shell ended (the box stopped?)")),
    );
    return opened;
  }

  /** A connection to 127.0.0.1:port inside the box, as a duplex byte stream. */
  forward(port: number, timeoutMs = 5000): Promise<Duplex> {
    return this.pipe({ v: PROTOCOL_VERSION, op: "forward", port }, `port ${port}`, timeoutMs, (why) => {
      return new WarrenError("port.unreachable", `nothing answers on port ${port} in the box: ${why}`);
    });
  }

  /** Claims the bridged connection a BridgeMessage offered: the agent's socket as a duplex stream. */
  bridge(id: number, timeoutMs = 5000): Promise<Duplex> {
    return this.pipe(
      { v: PROTOCOL_VERSION, op: "bridge", id },
      `bridged connection ${id}`,
      timeoutMs,
      (why) => unavailable(`boxd did not hand over bridged connection ${id}: ${why}`),
    );
  }

  /** Opens a connection that becomes a raw pipe once boxd answers Forwarded. */
  private async pipe(
    open: OpenMessage,
    what: string,
    timeoutMs: number,
    refused: (why: string) => Error,
  ): Promise<Duplex> {
    const sock = await this.connect(open);
    return new Promise((resolve, reject) => {
      const decoder = new FrameDecoder();
      const timer = setTimeout(() => {
        sock.destroy();
        reject(unavailable(`boxd did not open ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const onData = (chunk: Buffer): void => {
        let frames;
        try {
          frames = decoder.push(chunk, 1);
        } catch (err) {
          cleanup();
          sock.destroy();
          reject(unavailable(`boxd sent a bad frame: ${(err as Error).message}`, err));
          return;
        }
        const first = frames[0];
        if (!first) return;
        cleanup();
        let message: ServerMessage;
        try {
          message = parseServerMessage(first.payload);
        } catch (err) {
          sock.destroy();
          reject(unavailable(`boxd sent a bad message: ${(err as Error).message}`, err));
          return;
        }
        if (message.type !== "forwarded") {
          sock.destroy();
          reject(refused(message.type === "error" ? message.message : message.type));
          return;
        }
        // Anything after the answer is already the forwarded stream.
        const rest = decoder.rest();
        if (rest.length) sock.unshift(rest);
        resolve(sock);
      };
      const onClose = (): void => {
        cleanup();
        reject(unavailable(`boxd closed the connection while opening ${what}`));
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        sock.off("data", onData);
        sock.off("close", onClose);
        sock.pause();
      };
      sock.on("data", onData);
      sock.on("close", onClose);
    });
  }

  /**
   * The standing channel for agents' calls: `onCall` answers each request an agent's
   * command makes on boxd's calls socket (its uid is who calls). Resolves once boxd has
   * attached the channel; `closed` settles when it ends (the box stopped, or close()).
   */
  calls(onCall: (call: CallMessage) => Promise<CallAnswer>, timeoutMs = 5000): Promise<CallsChannel> {
    return this.#standing("calls", "call", timeoutMs, (m, sock) => {
      const send = (answer: CallAnswer): void => {
        if (sock.destroyed) return;
        let frame: Buffer;
        try {
          frame = encodeControl({ type: "reply", id: m.id, ...answer });
        } catch {
          frame = encodeControl({
            type: "reply",
            id: m.id,
            exit: 69,
            stderr: "warren-secret: internal: the answer is larger than a frame\n",
          });
        }
        sock.write(frame);
      };
      void onCall(m).then(send, () =>
        send({ exit: 69, stderr: "warren-secret: internal: the server could not answer; try again\n" }),
      );
    });
  }

  /**
   * The standing channel for bridges: `onBridge` hears of each connection accepted on a
   * bridge's port in the box (claim it with bridge(id)). Resolves once boxd has attached
   * the channel; `closed` settles when it ends.
   */
  bridges(onBridge: (offer: BridgeOffer) => void, timeoutMs = 5000): Promise<CallsChannel> {
    return this.#standing("bridges", "bridge", timeoutMs, (m) =>
      onBridge({ id: m.id, name: m.name, uid: m.uid }),
    );
  }

  /**
   * A standing channel of control frames: opened with `op`, ready when boxd answers with a
   * message of the same type, then each message of type `each` goes to `onMessage`; any
   * other message, or a bad frame, ends it.
   */
  async #standing<T extends "call" | "bridge">(
    op: "calls" | "bridges",
    each: T,
    timeoutMs: number,
    onMessage: (m: Extract<ServerMessage, { type: T }>, sock: net.Socket) => void,
  ): Promise<CallsChannel> {
    const sock = await this.connect({ v: PROTOCOL_VERSION, op });
    let ended: () => void = () => {};
    const closed = new Promise<void>((resolve) => (ended = resolve));
    sock.on("close", () => ended());
    sock.on("error", () => sock.destroy());
    const channel: CallsChannel = { close: () => sock.destroy(), closed };
    return new Promise((resolve, reject) => {
      const decoder = new FrameDecoder();
      let ready = false;
      const timer = setTimeout(() => {
        sock.destroy();
        reject(unavailable(`boxd did not open the ${op} channel within ${timeoutMs} ms`));
      }, timeoutMs);
      sock.on("close", () => {
        clearTimeout(timer);
        if (!ready) reject(unavailable(`boxd closed the ${op} channel as it opened`));
      });
      sock.on("data", (chunk: Buffer) => {
        let messages: ServerMessage[];
        try {
          messages = decoder.push(chunk).map((f) => {
            if (f.kind !== FrameKind.control)
              throw new ProtocolError(`a ${op} channel carries control frames`);
            return parseServerMessage(f.payload);
          });
        } catch (err) {
          sock.destroy();
          if (!ready) reject(unavailable(`boxd sent a bad frame: ${(err as Error).message}`, err));
          return;
        }
        for (const m of messages) {
          if (m.type === op && !ready) {
            ready = true;
            clearTimeout(timer);
            resolve(channel);
          } else if (m.type === each && ready) {
            onMessage(m as Extract<ServerMessage, { type: T }>, sock);
          } else {
            sock.destroy();
            if (!ready) reject(unavailable(`boxd answered the ${op} channel with ${m.type}`));
            return;
          }
        }
      });
    });
  }
}

/** A terminal's stream: input, size and signals in; output to `onData`; its exit. */
export interface PtyStream {
  /** The shell's pid in the box and the name of the terminal's cgroup. */
  readonly pid: number;
  readonly cgroup: string | undefined;
  /** Input for the terminal; false when the socket to boxd is full (wait for `drain`). */
  write(data: Uint8Array): boolean;
  /** Bytes of input waiting to be written to boxd. */
  readonly pending: number;
  onDrain(fn: () => void): void;
  resize(cols: number, rows: number): void;
  signal(signal: PtySignal): void;
  /** Kills the terminal's whole process tree; `exited` then settles. */
  cancel(): void;
  /** Pauses reading the terminal's output (boxd stops reading it too once its buffer fills). */
  pause(): void;
  resume(): void;
  /** Settles with the shell's exit; rejects with box.unavailable when boxd goes away first. */
  readonly exited: Promise<ExecResult>;
}

export interface PtyOptions {
  onData: (chunk: Buffer) => void;
  /** How long to wait for boxd to start the shell. */
  timeoutMs?: number;
}

/** The server's answer to one call (see CallReply). */
export type BridgeOffer = Omit<BridgeMessage, "type">;

export type CallAnswer = Omit<CallReply, "type" | "id">;

export interface CallsChannel {
  close(): void;
  /** Settles when the channel ends. */
  closed: Promise<void>;
}
