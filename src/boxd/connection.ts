// What every operation of BoxdClient shares: opening a connection to boxd with its Open
// message, and the errors boxd's answers become.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { WarrenError } from "../errors.js";
import type { BoxdEndpoint } from "./endpoint.js";
import {
  encodeControl,
  FrameDecoder,
  FrameKind,
  type ExecResult,
  type Frame,
  type OpenMessage,
  type ServerMessage,
} from "./protocol.js";
import { parseServerMessage } from "./validate.js";

/**
 * Opens one connection to boxd (one operation) and sends its Open message, and `then` (the
 * operation's first frames) in the same write.
 */
export type Connect = (open: OpenMessage, then?: readonly Buffer[]) => Promise<net.Socket>;

export function unavailable(message: string, cause?: unknown): WarrenError {
  return new WarrenError("box.unavailable", message, undefined, cause === undefined ? undefined : { cause });
}

/** boxd's `error` answer to starting a command or a terminal: what it refused, or why it could not. */
export function startRefused(
  what: "command" | "terminal",
  m: { code: string; message: string },
): WarrenError {
  if (m.code === "invalid")
    return new WarrenError("request.invalid", `boxd refused the ${what}: ${m.message}`);
  const doing = what === "command" ? "run the command" : "start the terminal";
  return unavailable(`boxd could not ${doing}: ${m.message}`);
}

/**
 * Connections that boxd kept after an exec (`keep`), for the next one: at most `max`, each
 * closed after `idleMs` unused. A connection that boxd closed meanwhile leaves the pool.
 */
export class KeptConnections {
  readonly #idle: { sock: net.Socket; timer: NodeJS.Timeout; drop: () => void }[] = [];

  constructor(
    private readonly max = 16,
    private readonly idleMs = 1000,
  ) {}

  take(): net.Socket | undefined {
    for (let k = this.#idle.pop(); k; k = this.#idle.pop()) {
      clearTimeout(k.timer);
      k.sock.off("close", k.drop);
      k.sock.off("error", k.drop);
      if (k.sock.destroyed || !k.sock.writable) continue;
      k.sock.ref();
      return k.sock;
    }
    return undefined;
  }

  put(sock: net.Socket): void {
    if (this.#idle.length >= this.max || sock.destroyed) {
      sock.destroy();
      return;
    }
    const k = {
      sock,
      timer: setTimeout(() => k.drop(), this.idleMs).unref(),
      drop: () => {
        clearTimeout(k.timer);
        const at = this.#idle.indexOf(k);
        if (at >= 0) this.#idle.splice(at, 1);
        sock.destroy();
      },
    };
    sock.once("close", k.drop);
    sock.once("error", k.drop);
    sock.unref();
    this.#idle.push(k);
  }

  close(): void {
    for (let k = this.#idle.pop(); k; k = this.#idle.pop()) k.drop();
  }
}

/** A unix socket's address holds 108 bytes with its closing NUL. */
const SUN_PATH_MAX = 107;

/**
 * Connects to the unix socket `file`. A path longer than an address holds (a deep STATE_ROOT,
 * such as an engine's volume mounted at its own host path) is reached through a descriptor of
 * its folder (/proc/self/fd/N/name), held until the connection is made or refused.
 */
function connectUnix(file: string): net.Socket {
  if (Buffer.byteLength(file) <= SUN_PATH_MAX) return net.connect({ path: file, allowHalfOpen: true });
  const fd = fs.openSync(path.dirname(file), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  const sock = net.connect({ path: `/proc/self/fd/${fd}/${path.basename(file)}`, allowHalfOpen: true });
  let open = true;
  const close = () => {
    if (open) fs.closeSync(fd);
    open = false;
  };
  sock.once("connect", close);
  sock.once("error", close);
  sock.once("close", close);
  return sock;
}

export function connector(endpoint: BoxdEndpoint, connectTimeoutMs: number): Connect {
  return (open, then = []) =>
    new Promise((resolve, reject) => {
      let sock: net.Socket;
      try {
        sock =
          endpoint.kind === "unix"
            ? connectUnix(endpoint.path)
            : net.connect({ host: endpoint.host, port: endpoint.port, allowHalfOpen: true });
      } catch (err) {
        reject(unavailable(`cannot reach boxd: ${(err as Error).message}; start the box first`, err));
        return;
      }
      const timer = setTimeout(() => {
        sock.destroy();
        reject(unavailable(`boxd did not accept a connection within ${connectTimeoutMs} ms`));
      }, connectTimeoutMs);
      sock.once("error", (err) => {
        clearTimeout(timer);
        reject(unavailable(`cannot reach boxd: ${err.message}; start the box first`, err));
      });
      sock.once("connect", () => {
        clearTimeout(timer);
        sock.removeAllListeners("error");
        // a failing socket closes too, and what uses it hears that (readFrames); a write that
        // fails once no operation listens (a kept connection boxd closed, stdin after the
        // exit) must not become an uncaught error (EPIPE)
        sock.on("error", () => {});
        sock.write(then.length > 0 ? Buffer.concat([encodeControl(open), ...then]) : encodeControl(open));
        resolve(sock);
      });
    });
}

/**
 * Reads a command's or a terminal's connection frame by frame: control frames are parsed and
 * given to `message`, the others to `frame`. A bad frame or message, the connection failing
 * or closing first: `fail`, with why (`closed` says what closed early). Returns what stops
 * reading it.
 */
export function readFrames(
  sock: net.Socket,
  o: {
    frame(f: Frame): void;
    message(m: ServerMessage): void;
    fail(err: WarrenError): void;
    closed: string;
    /** True once the operation ended: the rest of the chunk is left. */
    ended?: () => boolean;
  },
): () => void {
  const decoder = new FrameDecoder();
  const onData = (chunk: Buffer): void => {
    let frames;
    try {
      frames = decoder.push(chunk);
    } catch (err) {
      o.fail(unavailable(`boxd sent a bad frame: ${(err as Error).message}`, err));
      return;
    }
    for (const frame of frames) {
      if (o.ended?.()) return;
      if (frame.kind !== FrameKind.control) {
        o.frame(frame);
        continue;
      }
      let m: ServerMessage;
      try {
        m = parseServerMessage(frame.payload);
      } catch (err) {
        o.fail(unavailable(`boxd sent a bad message: ${(err as Error).message}`, err));
        continue;
      }
      o.message(m);
    }
  };
  const onError = (err: Error): void => {
    if (!o.ended?.()) o.fail(unavailable(`the connection to boxd failed: ${err.message}`, err));
  };
  const onClose = (): void => {
    if (!o.ended?.()) o.fail(unavailable(o.closed));
  };
  sock.on("data", onData);
  sock.on("error", onError);
  sock.on("close", onClose);
  // boxd gone (its box stopped, killed): its side ends; the socket is half-open (allowHalfOpen),
  // so no close comes until ours ends too, and the operation would wait for ever
  sock.on("end", onClose);
  // the connection goes on to another operation (a kept exec's): these listeners let go of it
  return () => {
    sock.off("data", onData);
    sock.off("error", onError);
    sock.off("close", onClose);
    sock.off("end", onClose);
  };
}

/**
 * How a message ends a command's or a terminal's connection: its exit (the result), boxd's
 * refusal, or an answer of another operation; undefined for `started`, the caller's own.
 */
export function endOf(
  message: ServerMessage,
  what: "command" | "terminal",
): { result: ExecResult } | { error: WarrenError } | undefined {
  switch (message.type) {
    case "started":
      return undefined;
    case "exit": {
      const { type: _type, ...result } = message;
      return { result };
    }
    case "error":
      return { error: startRefused(what, message) };
    case "pong":
    case "forwarded":
    case "calls":
    case "call":
    case "bridges":
    case "bridge":
      return {
        error: unavailable(
          `boxd answered ${what === "command" ? "an exec" : "a terminal"} with ${message.type}`,
        ),
      };
  }
}
