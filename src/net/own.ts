// The server's own endpoints and connections. What no box and no server-side fetch may reach
// (the listening sockets of the API, the previews, a local database), and the connections the
// server opened itself (the egress proxy's and the connector's upstream sides), whose requests
// the API never believes, whatever they carry.
import type net from "node:net";
import { parseIp } from "../contract/policy.js";

/** An address as bytes (IPv4-mapped IPv6 as IPv4), or null when it is not an IP. */
function addressBytes(address: string | undefined): number[] | null {
  if (!address) return null;
  const bare = address.replace(/^\[|\]$/g, "").split("%")[0] ?? "";
  const bytes = parseIp(bare);
  if (!bytes) return null;
  const mapped =
    bytes.length === 16 &&
    bytes.slice(0, 10).every((b) => b === 0) &&
    bytes[10] === 0xff &&
    bytes[11] === 0xff;
  return mapped ? bytes.slice(12) : bytes;
}

/** Whether an address (as a socket gives it) is in one of the ranges (an IPv4-mapped IPv6 address counts as IPv4). */
export function inRanges(address: string | undefined, ranges: { bytes: number[]; bits: number }[]): boolean {
  const bytes = addressBytes(address);
  if (!bytes) return false;
  return ranges.some((r) => {
    const net =
      r.bytes.length === 16 &&
      r.bytes.slice(0, 10).every((b) => b === 0) &&
      r.bytes[10] === 0xff &&
      r.bytes[11] === 0xff
        ? r.bytes.slice(12)
        : r.bytes;
    const bits = net.length === r.bytes.length ? r.bits : r.bits - 96;
    if (net.length !== bytes.length || bits < 0) return false;
    for (let i = 0; i < bits; i++) {
      const m = 0x80 >> (i % 8);
      if (((net[i >> 3] ?? 0) & m) !== ((bytes[i >> 3] ?? 0) & m)) return false;
    }
    return true;
  });
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
    const bytes = addressBytes(address);
    if (bytes) this.#fixed.push({ address: bytes, port });
  }

  /** Every endpoint this server listens on or depends on, as now. */
  listening(): Endpoint[] {
    const out = [...this.#fixed];
    for (const s of this.#servers) {
      const a = s.address();
      if (!a || typeof a === "string") continue;
      const bytes = addressBytes(a.address);
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
      const bytes = addressBytes(socket.localAddress);
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
    const bytes = addressBytes(remoteAddress);
    if (!bytes || remotePort === undefined) return false;
    return this.#conns.has(key(bytes, remotePort));
  }
}
