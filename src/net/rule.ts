// The address rule: where the server may connect on an agent's behalf. One rule for the egress
// proxy's upstream side and for every server-side fetch (http and MCP tools, web_fetch, model
// APIs): never the server's own endpoints, never unspecified, link-local, metadata or multicast
// addresses; loopback, private and reserved ranges (and the host's own addresses) only inside
// the operator's bound (WARREN_EGRESS_PRIVATE_ALLOW); public addresses otherwise.
import os from "node:os";
import type { AddressRange } from "../config/index.js";
import { parseIp, type NetworkEntry } from "../contract/policy.js";
import type { OwnEndpoints } from "./own.js";

/** A host as written anywhere, normalised: an IP (bytes, IPv4-mapped IPv6 as IPv4) or a name. */
export type Host = { kind: "ip"; bytes: number[]; text: string } | { kind: "name"; name: string };

const nameRe = /^[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*$/;

/**
 * Normalises a host however it is spelled: case, brackets, one trailing dot, IPv4 in decimal,
 * octal, hex or short forms (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`), IPv6 (mapped
 * IPv4 included). Null when it is neither a host name nor an IP (NUL, spaces, `@`, ...).
 */
export function normaliseHost(raw: string): Host | null {
  if (raw.length === 0 || raw.length > 300) return null;
  let h = raw.toLowerCase();
  const bracketed = h.startsWith("[") && h.endsWith("]");
  if (bracketed) h = h.slice(1, -1);
  if (bracketed || h.includes(":")) {
    const v6 = parseIp(h);
    if (!v6 || v6.length !== 16) return null;
    const bytes = unmap(v6);
    return { kind: "ip", bytes, text: formatIp(bytes) };
  }
  if (h.endsWith(".")) h = h.slice(0, -1);
  if (!nameRe.test(h)) return null;
  // every label a number (in any base the URL standard knows): an IPv4 address, parsed as browsers do
  if (/^(?:0x[0-9a-f]*|\d+)(?:\.(?:0x[0-9a-f]*|\d+))*$/.test(h)) {
    let parsed: string;
    try {
      parsed = new URL(`http://${h}/`).hostname;
    } catch {
      return null;
    }
    const v4 = parseIp(parsed);
    if (!v4 || v4.length !== 4) return null;
    return { kind: "ip", bytes: v4, text: formatIp(v4) };
  }
  return { kind: "name", name: h };
}

/** IPv4 carried in IPv6 (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`) as IPv4. */
export function unmap(addr: number[]): number[] {
  if (addr.length !== 16) return addr;
  const zero10 = addr.slice(0, 10).every((b) => b === 0);
  const mapped = zero10 && addr[10] === 0xff && addr[11] === 0xff;
  const nat64 =
    addr[0] === 0 &&
    addr[1] === 0x64 &&
    addr[2] === 0xff &&
    addr[3] === 0x9b &&
    addr.slice(4, 12).every((b) => b === 0);
  const tail = addr.slice(12);
  const compat =
    zero10 &&
    addr[10] === 0 &&
    addr[11] === 0 &&
    !(tail.slice(0, 3).every((b) => b === 0) && (tail[3] ?? 0) <= 1);
  return mapped || nat64 || compat ? tail : addr;
}

/**
 * The IPv4 addresses an IPv6 address carries where unmap does not take it as IPv4: 6to4
 * (`2002::/16`, the IPv4 in bits 16..47), Teredo (`2001::/32`, the client's IPv4 in the last 32
 * bits, inverted) and local-use NAT64 (`64:ff9b:1::/48`, the IPv4 where RFC 6052 puts it for a
 * prefix of 48, 56, 64 or 96 bits: each layout whose other bits are zero, or all of them when
 * none fits, so that the rule judges every IPv4 the address may stand for). Empty otherwise.
 */
export function embeddedIpv4(addr: number[]): number[][] {
  if (addr.length !== 16) return [];
  const b = (i: number) => addr[i] ?? 0;
  if (b(0) === 0x20 && b(1) === 0x02) return [addr.slice(2, 6)];
  if (b(0) === 0x20 && b(1) === 0x01 && b(2) === 0 && b(3) === 0)
    return [addr.slice(12).map((x) => x ^ 0xff)];
  if (b(0) === 0 && b(1) === 0x64 && b(2) === 0xff && b(3) === 0x9b && b(4) === 0 && b(5) === 1) {
    const zero = (from: number, to: number) => addr.slice(from, to).every((x) => x === 0);
    // each layout whose other bits are zero, as RFC 6052 writes them; every layout when none is
    const layouts: [boolean, number[]][] = [
      [zero(11, 16), [b(6), b(7), b(9), b(10)]],
      [zero(12, 16) && b(6) === 0, [b(7), b(9), b(10), b(11)]],
      [zero(13, 16) && zero(6, 8), [b(9), b(10), b(11), b(12)]],
      [zero(6, 12), addr.slice(12)],
    ];
    const fit = layouts.filter(([ok]) => ok).map(([, v4]) => v4);
    return fit.length > 0 ? fit : layouts.map(([, v4]) => v4);
  }
  return [];
}

export function formatIp(addr: number[]): string {
  if (addr.length === 4) return addr.join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((addr[i] ?? 0) << 8) | (addr[i + 1] ?? 0)).toString(16));
  let best = -1;
  let len = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== "0") {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > len && j - i > 1) [best, len] = [i, j - i];
    i = j;
  }
  if (best < 0) return groups.join(":");
  return `${groups.slice(0, best).join(":")}::${groups.slice(best + len).join(":")}`;
}

/** An address range: bytes and a prefix length (4 or 16 bytes). */
export interface Range {
  bytes: number[];
  bits: number;
}

export function inRange(addr: number[], r: Range): boolean {
  if (addr.length !== r.bytes.length) return false;
  for (let i = 0; i < r.bits; i += 8) {
    const take = Math.min(8, r.bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((addr[i / 8] ?? 0) & mask) !== ((r.bytes[i / 8] ?? 0) & mask)) return false;
  }
  return true;
}

/** Whether two ranges share an address (CIDRs either nest or are disjoint). */
export function overlaps(a: Range, b: Range): boolean {
  if (a.bytes.length !== b.bytes.length) return false;
  return a.bits <= b.bits ? inRange(b.bytes, a) : inRange(a.bytes, b);
}

const range = (text: string, bits: number, what: string) => ({ bytes: parseIp(text) ?? [], bits, what });

/** Never reached, whatever a policy or the operator's bound says. */
export const NEVER: readonly (Range & { what: string })[] = [
  range("0.0.0.0", 8, "an unspecified"),
  range("169.254.0.0", 16, "a link-local (metadata)"),
  range("224.0.0.0", 4, "a multicast"),
  range("255.255.255.255", 32, "a broadcast"),
  range("::", 128, "an unspecified"),
  range("fe80::", 10, "a link-local"),
  range("fd00:ec2::254", 128, "a metadata"),
  range("ff00::", 8, "a multicast"),
];

/** Reached only inside the operator's bound. */
export const BOUNDED: readonly (Range & { what: string })[] = [
  range("10.0.0.0", 8, "a private"),
  range("100.64.0.0", 10, "a private (shared)"),
  range("127.0.0.0", 8, "a loopback"),
  range("172.16.0.0", 12, "a private"),
  range("192.0.0.0", 24, "a reserved"),
  range("192.168.0.0", 16, "a private"),
  range("198.18.0.0", 15, "a reserved"),
  range("240.0.0.0", 4, "a reserved"),
  range("::1", 128, "a loopback"),
  range("fc00::", 7, "a private"),
];

export type Verdict = { ok: true } | { ok: false; reason: string };

export interface AddressRuleOptions {
  /** The operator's bound: the only loopback and private addresses (and ports) that may be reached. */
  bound: readonly AddressRange[];
  /** The server's listening endpoints. */
  own: Pick<OwnEndpoints, "listening">;
  /** The host's own interface addresses (default: read from the system, refreshed every 10 s). */
  interfaces?: () => number[][];
}

/**
 * An address as a socket or an interface gives it (`::ffff:127.0.0.1`, `[::1]`, `fe80::1%eth0`),
 * as bytes with IPv4 carried in IPv6 as IPv4; null when it is not an IP.
 */
export function addressOf(text: string | undefined): number[] | null {
  if (!text) return null;
  const bytes = parseIp(text.replace(/^\[|\]$/g, "").split("%")[0] ?? "");
  return bytes ? unmap(bytes) : null;
}

function systemInterfaces(): number[][] {
  const out: number[][] = [];
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? []) {
      const bytes = addressOf(a.address);
      if (bytes) out.push(bytes);
    }
  return out;
}

const same = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export class AddressRule {
  readonly #o: AddressRuleOptions;
  #ifaces: number[][] = [];
  #ifacesAt = 0;

  constructor(o: AddressRuleOptions) {
    this.#o = o;
  }

  #interfaces(): number[][] {
    if (this.#o.interfaces) return this.#o.interfaces();
    if (Date.now() - this.#ifacesAt > 10_000) {
      this.#ifaces = systemInterfaces();
      this.#ifacesAt = Date.now();
    }
    return this.#ifaces;
  }

  /** Whether the address is one of this host's: loopback or an interface's. */
  #isHost(addr: number[]): boolean {
    return (
      inRange(addr, { bytes: [127, 0, 0, 0], bits: 8 }) ||
      same(addr, parseIp("::1") ?? []) ||
      this.#interfaces().some((i) => same(i, addr))
    );
  }

  /** Whether the operator's bound holds this address and port. */
  inBound(addr: number[], port: number | undefined): boolean {
    return this.#o.bound.some((b) => (b.port === undefined || b.port === port) && inRange(addr, b));
  }

  /** Whether the server listens on (or depends on) this address and port. */
  isOwnEndpoint(addr: number[], port: number): boolean {
    return this.#o.own.listening().some((e) => {
      if (e.port !== port) return false;
      const wildcard = e.address.every((b) => b === 0);
      return same(e.address, addr) || ((wildcard || this.#isHost(e.address)) && this.#isHost(addr));
    });
  }

  /**
   * Why no policy may hold this allow entry (null: it may), for the save check: an IP or CIDR
   * entry may hold no never-reached address, no endpoint of the server (for its port; with no
   * port, for any), and of loopback, private, reserved and this host's own addresses only what
   * the operator's bound holds (for its port); a prefix may not be wider than MIN_PREFIX.
   * Per entry, so a union of entries holds no more than the bound either. A name entry may not
   * name this host (`localhost`, `*.localhost`) nor spell an address (`0x7f000001`).
   */
  entryProblem(entry: NetworkEntry): string | null {
    if (entry.kind !== "ip") {
      const name = entry.kind === "host" ? entry.host : entry.domain;
      const h = normaliseHost(name);
      if (h?.kind === "ip") return `spells the address ${h.text}; write it as an IP`;
      if (isLocalName(name) || (entry.kind === "below" && name === "localhost"))
        return "names this host (localhost); list the address and port the operator's bound allows";
      return null;
    }
    const e = unmapRange({ bytes: entry.bytes, bits: entry.bits });
    const port = entry.port;
    const text = rangeText(e);
    const v4 = e.bytes.length === 4;
    if (e.bits < (v4 ? MIN_PREFIX.v4 : MIN_PREFIX.v6))
      return `is wider than a /${v4 ? MIN_PREFIX.v4 : MIN_PREFIX.v6}; name the networks (an entry holds at most a /${MIN_PREFIX.v4} of IPv4 or a /${MIN_PREFIX.v6} of IPv6)`;
    if (!v4 && e.bits < 96 && (overlaps(e, MAPPED) || overlaps(e, NAT64)))
      return `holds IPv4 addresses written as IPv6 (${text}); list IPv4 networks as IPv4`;
    for (const c of NEVER)
      if (overlaps(e, c)) return `holds ${c.what} address (${rangeText(c)}), which no policy may reach`;
    if (!v4 && EMBEDDING.some((r) => overlaps(e, r))) {
      if (e.bits < 128)
        return `holds IPv6 addresses that carry IPv4 ones (6to4, Teredo, NAT64: ${text}); list IPv4 networks as IPv4`;
      for (const inner of embeddedIpv4(e.bytes)) {
        const problem = this.entryProblem({
          kind: "ip",
          bytes: inner,
          bits: 32,
          ...(port !== undefined ? { port } : {}),
        });
        if (problem) return `carries ${formatIp(inner)} (which ${problem})`;
      }
    }
    // the server's endpoints: one listening on a wildcard or on one of this host's addresses is on every host address
    for (const own of this.#o.own.listening()) {
      if (port !== undefined && port !== own.port) continue;
      const onHost = own.address.every((b) => b === 0) || this.#isHost(own.address);
      const held = onHost
        ? [LOOPBACK4, LOOPBACK6, ...this.#interfaces().map((i) => ({ bytes: i, bits: i.length * 8 }))].some(
            (r) => overlaps(e, r),
          )
        : inRange(own.address, e);
      if (held)
        return `holds the warren server's own endpoint (port ${own.port}), which no policy may reach${port === undefined ? "; name the ports" : ""}`;
    }
    const restricted: { part: Range; what: string }[] = [];
    for (const c of BOUNDED) {
      const part = shared(e, c);
      if (part) restricted.push({ part, what: c.what });
    }
    for (const i of this.#interfaces())
      if (inRange(i, e) && !BOUNDED.some((c) => inRange(i, c)))
        restricted.push({ part: { bytes: i, bits: i.length * 8 }, what: "this host's own" });
    for (const { part, what } of restricted) {
      const inside = this.#o.bound.some(
        (b) =>
          (b.port === undefined || b.port === port) &&
          b.bytes.length === part.bytes.length &&
          b.bits <= part.bits &&
          inRange(part.bytes, b),
      );
      if (!inside)
        return `holds ${what} address${part.bits === part.bytes.length * 8 ? "" : "es"} (${port !== undefined ? withPort(part.bytes, port) : rangeText(part)}) outside the operator's bound (WARREN_EGRESS_PRIVATE_ALLOW)`;
    }
    return null;
  }

  /** Whether reaching the address takes the operator's bound: loopback, private, reserved, this host's. */
  needsBound(address: number[]): boolean {
    const addr = unmap(address);
    return BOUNDED.some((c) => inRange(addr, c)) || this.#isHost(addr);
  }

  /** The decision for one connection to an address (already resolved: connect to exactly this one). */
  judge(address: number[], port: number): Verdict {
    const addr = unmap(address);
    const text = formatIp(addr);
    const at = withPort(addr, port);
    for (const c of NEVER) if (inRange(addr, c)) return { ok: false, reason: `${text} is ${c.what} address` };
    // an IPv6 address that carries an IPv4 one (6to4, Teredo, NAT64) is judged as that IPv4 too
    for (const v4 of embeddedIpv4(addr)) {
      const inner = this.judge(v4, port);
      if (!inner.ok) return { ok: false, reason: `${text} carries ${formatIp(v4)}: ${inner.reason}` };
    }
    if (this.isOwnEndpoint(addr, port))
      return { ok: false, reason: `${at} is the warren server's own endpoint` };
    const bounded = BOUNDED.find((c) => inRange(addr, c));
    const what = bounded?.what ?? (this.#isHost(addr) ? "this host's own" : null);
    if (what && !this.inBound(addr, port))
      return {
        ok: false,
        reason: `${at} is ${what} address outside the operator's bound (WARREN_EGRESS_PRIVATE_ALLOW)`,
      };
    return { ok: true };
  }
}

/** Names that are this host whatever a resolver says (browsers resolve `*.localhost` to loopback). */
export function isLocalName(name: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, "");
  return (
    n === "localhost" ||
    n.endsWith(".localhost") ||
    n === "localhost.localdomain" ||
    n === "ip6-localhost" ||
    n === "ip6-loopback"
  );
}

const MAPPED: Range = { bytes: parseIp("::ffff:0:0") ?? [], bits: 96 };
const NAT64: Range = { bytes: parseIp("64:ff9b::") ?? [], bits: 96 };
/** IPv6 ranges whose addresses carry an IPv4 one (embeddedIpv4). */
const EMBEDDING: readonly Range[] = [
  { bytes: parseIp("2002::") ?? [], bits: 16 },
  { bytes: parseIp("2001::") ?? [], bits: 32 },
  { bytes: parseIp("64:ff9b:1::") ?? [], bits: 48 },
];

/** An IPv6 range inside the IPv4-mapped (or NAT64) space as the IPv4 range it is; others unchanged. */
export function unmapRange(r: Range): Range {
  if (r.bytes.length !== 16 || r.bits < 96) return r;
  if (inRange(r.bytes, MAPPED) || inRange(r.bytes, NAT64))
    return { bytes: r.bytes.slice(12), bits: r.bits - 96 };
  return r;
}

/** The shortest prefixes an entry may have: wider is "everything" in a few pieces. */
export const MIN_PREFIX = { v4: 8, v6: 32 } as const;

const withPort = (addr: number[], port: number) =>
  addr.length === 16 ? `[${formatIp(addr)}]:${port}` : `${formatIp(addr)}:${port}`;
const rangeText = (r: Range) =>
  r.bits === r.bytes.length * 8 ? formatIp(r.bytes) : `${formatIp(r.bytes)}/${r.bits}`;
/** The part two nested-or-disjoint ranges share (the narrower one), or null. */
const shared = (a: Range, b: Range): Range | null => (overlaps(a, b) ? (a.bits >= b.bits ? a : b) : null);
const LOOPBACK4: Range = { bytes: [127, 0, 0, 0], bits: 8 };
const LOOPBACK6: Range = { bytes: parseIp("::1") ?? [], bits: 128 };
