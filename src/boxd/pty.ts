// A terminal over boxd's pty op (BoxdClient.pty).
import { WarrenError } from "../errors.js";
import { endOf, readFrames, unavailable, type Connect } from "./connection.js";
import {
  FrameKind,
  PROTOCOL_VERSION,
  ProtocolError,
  encodeControl,
  encodeFrame,
  splitPayload,
  type ExecResult,
  type PtySignal,
  type PtySpec,
  type ServerMessage,
} from "./protocol.js";
import { parsePtySpec } from "./validate.js";

/**
 * Opens a terminal: resolves once boxd has started its shell (rejects with
 * request.invalid when boxd refuses the request, box.unavailable when it cannot start it).
 */
export async function openPty(connect: Connect, spec: PtySpec, options: PtyOptions): Promise<PtyStream> {
  let checked: PtySpec;
  try {
    checked = parsePtySpec(spec);
  } catch (err) {
    if (err instanceof ProtocolError) throw new WarrenError("request.invalid", err.message);
    throw err;
  }
  const sock = await connect({ v: PROTOCOL_VERSION, op: "pty", pty: checked });
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
      default: {
        const end = endOf(message, "terminal");
        if (end) finish("error" in end ? end.error : null, "result" in end ? end.result : undefined);
      }
    }
  };
  readFrames(sock, {
    frame: (frame) => {
      if (frame.kind === FrameKind.data) options.onData(frame.payload);
    },
    message: onMessage,
    fail: (err) => finish(err),
    closed: "boxd closed the terminal's connection before its shell ended (the box stopped?)",
    ended: () => done,
  });
  return opened;
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
