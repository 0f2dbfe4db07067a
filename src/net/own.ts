// The server's own endpoints and connections. What no box and no server-side fetch may reach
// (the listening sockets of the API, the previews, a local database), and the connections the
// server opened itself (the egress proxy's and the connector's upstream sides), whose requests
// the API never believes, whatever they carry.
import type net from "node:net";
import { addressOf, inRange, unmapRange, type Range } from "./rule.js";

/** Whether an address (as a socket gives it) is in one of the ranges (IPv4 in IPv6 counts as IPv4, on both sides). */
export function inRanges(address: string | undefined, ranges: Range[]): boolean {
  const bytes = addressOf(address);
  return bytes !== null && ranges.some((r) => inRange(bytes, unmapRange(r)));
}

const key = (bytes: number[], port: number) => `${bytes.join(".")}|${port}`;

interface Endpoint {
  /** The listening address as bytes; all zeros for a wildcard (0.0.0.0 or ::). */
  address: number[];
  port: number;
}

export class OwnEndpoints {
  readonly #servers = new Set<net.Server>();
  readonly #fixed: Endpoint[] = [];
  readonly #conns = new Set<string>();

  /** A listening server of this process (the API, the previews): its address is read when asked. */
  addServer(server: net.Server): void {
    this.#servers.add(server);
    server.once("close", () => this.#servers.delete(server));
  }

  /** An endpoint given by configuration (the PostgreSQL server of DATABASE_URL). */
  addFixed(address: string, port: number): void {
    const bytes = addressOf(address);
    if (bytes) this.#fixed.push({ address: bytes, port });
  }

  /** Every endpoint this server listens on or depends on, as now. */
  listening(): Endpoint[] {
    const out = [...this.#fixed];
    for (const s of this.#servers) {
      const a = s.address();
      if (!a || typeof a === "string") continue;
      const bytes = addressOf(a.address);
      if (bytes) out.push({ address: bytes, port: a.port });
    }
    return out;
  }

  /**
   * An outgoing socket the server opened on an agent's behalf: while it is open, a request
   * that arrives from its local address and port is the server talking to itself.
   */
  track(socket: net.Socket): void {
    const add = () => {
      const bytes = addressOf(socket.localAddress);
      if (!bytes || socket.localPort === undefined) return;
      const k = key(bytes, socket.localPort);
      this.#conns.add(k);
      socket.once("close", () => this.#conns.delete(k));
    };
    if (socket.localPort !== undefined && !socket.connecting) add();
    else socket.once("connect", add);
  }

  /** Whether a peer (as the API's socket sees it) is one of the server's own outgoing connections. */
  isOwnConnection(remoteAddress: string | undefined, remotePort: number | undefined): boolean {
    const bytes = addressOf(remoteAddress);
    if (!bytes || remotePort === undefined) return false;
    return this.#conns.has(key(bytes, remotePort));
  }
}
