// The server's side of the boxd protocol (see protocol.ts; boxd itself is
// native/boxd/). One connection per operation, so any number of execs and
// forwards run at once over one client.

import type { Duplex } from "node:stream";
import { WarrenError } from "../errors.js";
import { openBridges, openCalls, type BridgeOffer, type CallAnswer, type CallsChannel } from "./channels.js";
import { connector, endOf, KeptConnections, readFrames, unavailable, type Connect } from "./connection.js";
import type { BoxdEndpoint } from "./endpoint.js";
import {
  FrameDecoder,
  FrameKind,
  PROTOCOL_VERSION,
  encodeControl,
  encodeFrame,
  ProtocolError,
  splitPayload,
  type CallMessage,
  type ExecResult,
  type ExecSpec,
  type OpenMessage,
  type PingResult,
  type PtySpec,
  type ServerMessage,
} from "./protocol.js";
import { openPty, type PtyOptions, type PtyStream } from "./pty.js";
import { parseExecSpec, parseServerMessage } from "./validate.js";

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

export class BoxdClient {
  private readonly connect: Connect;
  /** Connections boxd kept after an exec, for the next exec (no connect per command). */
  readonly #kept = new KeptConnections();

  constructor(endpoint: BoxdEndpoint | string, options: BoxdClientOptions = {}) {
    this.connect = connector(
      typeof endpoint === "string" ? { kind: "unix", path: endpoint } : endpoint,
      options.connectTimeoutMs ?? 5000,
    );
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
    const initial =
      typeof stdin === "string" ? Buffer.from(stdin, "utf8") : stdin ? Buffer.from(stdin) : null;
    // the command's stdin (and its end) go with the Open message, in one write
    const first = initial ? [...splitPayload(initial)].map((part) => encodeFrame(FrameKind.stdin, part)) : [];
    if (!options.stdinStream) first.push(encodeControl({ type: "stdin_eof" }));
    // a whole stdin goes with the Open message: boxd can keep the connection for the next exec
    const keep = !options.stdinStream;
    const open: OpenMessage = { v: PROTOCOL_VERSION, op: "exec", exec: spec, ...(keep ? { keep } : {}) };
    const reused = keep ? this.#kept.take() : undefined;
    if (reused) reused.write(Buffer.concat([encodeControl(open), ...first]));
    const sock = reused ?? (await this.connect(open, first));

    return new Promise<ExecOutcome>((resolve, reject) => {
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let settled = false;
      let started = false;
      let cancelSent = false;
      const done = (err: Error | null, result?: ExecResult): void => {
        if (settled) return;
        settled = true;
        options.signal?.removeEventListener("abort", onAbort);
        stopReading();
        if (!err && result?.kept && !cancelSent) this.#kept.put(sock);
        else sock.destroy();
        if (err && reused && !started && !options.signal?.aborted) {
          // a kept connection that boxd closed meanwhile (the box restarted): once more, anew
          resolve(this.exec(request, options));
          return;
        }
        if (err) reject(err);
        else if (result) {
          const { kept: _kept, ...answer } = result;
          resolve({ ...answer, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) });
        }
      };
      const onAbort = (): void => {
        cancelSent = true;
        if (!sock.destroyed) sock.write(encodeControl({ type: "cancel" }));
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      // aborted while the connection was being made: the event has fired already
      if (options.signal?.aborted) onAbort();

      const stopReading = readFrames(sock, {
        frame: (frame) => {
          if (frame.kind === FrameKind.stdout) {
            if (options.onStdout) options.onStdout(frame.payload);
            else stdout.push(frame.payload);
          } else if (frame.kind === FrameKind.stderr) {
            if (options.onStderr) options.onStderr(frame.payload);
            else stderr.push(frame.payload);
          }
        },
        message: (message) => {
          if (message.type === "started") {
            started = true;
            return void options.onStart?.(message.pid, message.cgroup);
          }
          const end = endOf(message, "command");
          if (end) done("error" in end ? end.error : null, "result" in end ? end.result : undefined);
        },
        fail: (err) => done(err),
        ended: () => settled,
        closed: "boxd closed the connection before the command ended (the box stopped?)",
      });

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
  pty(spec: PtySpec, options: PtyOptions): Promise<PtyStream> {
    return openPty(this.connect, spec, options);
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
   * command makes on boxd's calls socket (its uid is who calls).
   */
  calls(onCall: (call: CallMessage) => Promise<CallAnswer>, timeoutMs = 5000): Promise<CallsChannel> {
    return openCalls(this.connect, onCall, timeoutMs);
  }

  /** The standing channel for bridges: `onBridge` hears of each connection accepted on a bridge's port. */
  bridges(onBridge: (offer: BridgeOffer) => void, timeoutMs = 5000): Promise<CallsChannel> {
    return openBridges(this.connect, onBridge, timeoutMs);
  }
}
