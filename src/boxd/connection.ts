// What every operation of BoxdClient shares: opening a connection to boxd with its Open
// message, and the errors boxd's answers become.
import net from "node:net";
import { WarrenError } from "../errors.js";
import type { BoxdEndpoint } from "./endpoint.js";
import { encodeControl, type OpenMessage } from "./protocol.js";

/** Opens one connection to boxd (one operation) and sends its Open message. */
export type Connect = (open: OpenMessage) => Promise<net.Socket>;

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

export function connector(endpoint: BoxdEndpoint, connectTimeoutMs: number): Connect {
  return (open) =>
    new Promise((resolve, reject) => {
      const sock =
        endpoint.kind === "unix"
          ? net.connect({ path: endpoint.path, allowHalfOpen: true })
          : net.connect({ host: endpoint.host, port: endpoint.port, allowHalfOpen: true });
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
        sock.write(encodeControl(open));
        resolve(sock);
      });
    });
}
