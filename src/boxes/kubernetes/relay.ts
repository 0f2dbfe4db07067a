// How the server reaches boxd in a Pod: a unix socket on this host per running box (the
// box's endpoint, so BoxdClient stays as it is) whose every connection becomes one exec of
// box-bridge in the Pod through the API server, box-bridge joining the exec's stdin and
// stdout to boxd's socket there. The exec carries the bytes over the API server's
// websocket channel protocol (stdin on channel 0, stdout 1, stderr 2, the exit status 3;
// `v5.channel.k8s.io` also closes stdin alone, which becomes the end of the socket's
// writing side). docs/kubernetes.md says why exec and not port-forward or a listener.
import fs from "node:fs";
import net from "node:net";
import { PassThrough, Writable } from "node:stream";
import { Exec, type KubeConfig } from "@kubernetes/client-node";
import type { LoggerLike } from "../kit/logger.js";
import { CONTAINER, IN_POD } from "./manifests.js";

export interface RelayTarget {
  namespace: string;
  pod: string;
}

/** One relay per running box: its socket, and the connections it carries. */
export class Relay {
  private constructor(
    readonly socketPath: string,
    private readonly server: net.Server,
    private readonly open: Set<net.Socket>,
  ) {}

  static async listen(
    kc: KubeConfig,
    target: RelayTarget,
    socketPath: string,
    logger?: LoggerLike,
  ): Promise<Relay> {
    fs.rmSync(socketPath, { force: true });
    const open = new Set<net.Socket>();
    const server = net.createServer({ allowHalfOpen: true }, (sock) => {
      open.add(sock);
      sock.once("close", () => open.delete(sock));
      carry(kc, target, sock, logger);
    });
    const relay = new Relay(socketPath, server, open);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // only the server's own user reaches boxd through it
    fs.chmodSync(socketPath, 0o600);
    server.unref();
    return relay;
  }

  close(): void {
    this.server.close();
    for (const s of this.open) s.destroy();
    fs.rmSync(this.socketPath, { force: true });
  }
}

/** One connection: one exec of box-bridge, its stdout back to the connection. */
function carry(kc: KubeConfig, target: RelayTarget, sock: net.Socket, logger?: LoggerLike): void {
  const stdin = new PassThrough();
  let stderr = "";
  let ended = false;
  const stdout = new Writable({
    write(chunk: Buffer, _enc, cb) {
      if (sock.destroyed) return cb();
      if (sock.write(chunk)) cb();
      else sock.once("drain", () => cb());
    },
    final(cb) {
      // boxd closed its side (box-bridge ended): so does the connection's
      ended = true;
      sock.end();
      cb();
    },
  });
  const errors = new Writable({
    write(chunk: Buffer, _enc, cb) {
      stderr = (stderr + chunk.toString("utf8")).slice(-500);
      cb();
    },
  });
  sock.on("data", (c: Buffer) => stdin.write(c));
  sock.on("end", () => stdin.end());
  sock.on("error", () => sock.destroy());
  let ws: { close(): void } | undefined;
  sock.once("close", () => ws?.close());
  new Exec(kc)
    .exec(
      target.namespace,
      target.pod,
      CONTAINER,
      [IN_POD.bridge, IN_POD.socket],
      stdout,
      errors,
      stdin,
      false,
      (status) => {
        if (status.status !== "Success")
          logger?.error(
            `box-bridge in Pod ${target.pod} ended: ${status.message ?? status.status}${stderr ? `; ${stderr.trim()}` : ""}`,
          );
      },
    )
    .then(
      (conn) => {
        ws = conn;
        if (sock.destroyed) conn.close();
        // the exec ended without its status (the API server or the Pod went away)
        conn.on("close", () => {
          if (!ended) sock.destroy();
        });
      },
      (err: unknown) => {
        logger?.error(`exec in Pod ${target.pod} refused: ${(err as Error).message ?? String(err)}`);
        sock.destroy();
      },
    );
}
