// The egress decision: whether an agent's network policy lets a connection through to a
// host and port, and whether the address that host resolves to may be reached at all.
import { parseIp, parseNetworkEntry, type NetworkEntry, type SandboxPolicy } from "../contract/policy.js";

type Network = SandboxPolicy["network"];

/** A policy's network part, parsed once per connection. */
export interface CompiledPolicy {
  open: boolean;
  entries: { text: string; entry: NetworkEntry }[];
  rules: NonNullable<Network["rules"]>;
}

export function compilePolicy(network: Network): CompiledPolicy {
  const entries: CompiledPolicy["entries"] = [];
  for (const text of network.allow) {
    const entry = parseNetworkEntry(text);
    // stored policies were checked when set; one that no longer parses allows nothing
    if (typeof entry !== "string") entries.push({ text, entry });
  }
  return { open: network.mode === "open", entries, rules: network.rules ?? [] };
}

/** Where a connection goes: a host name (lowercase) or an IP literal, and a port. */
export interface Target {
  host: string;
  port: number;
  /** The bytes of host when it is an IP literal. */
  ip: number[] | null;
}

/** A host as a client wrote it (brackets around IPv6 allowed), checked; null when malformed. */
export function targetOf(host: string, port: number): Target | null {
  let h = host.toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".")) h = h.slice(0, -1); // the root label: example.com. is example.com
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  const ip = parseIp(h);
  if (ip) return { host: ip.length === 4 ? h : formatIp(ip), port, ip };
  if (typeof parseNetworkEntry(h) === "string" || h.includes("*") || h.includes(":")) return null;
  return { host: h, port, ip: null };
}

function inCidr(addr: number[], net: number[], bits: number): boolean {
  if (addr.length !== net.length) return false;
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((addr[i / 8] ?? 0) & mask) !== ((net[i / 8] ?? 0) & mask)) return false;
  }
  return true;
}

function portOk(entry: NetworkEntry, port: number): boolean {
  return entry.port === undefined || entry.port === port;
}

/** The allow entry that names this target, or undefined. */
export function matchEntry(p: CompiledPolicy, t: Target): string | undefined {
  for (const { text, entry } of p.entries) {
    if (!portOk(entry, t.port)) continue;
    if (entry.kind === "ip" && t.ip && inCidr(t.ip, entry.bytes, entry.bits)) return text;
    if (t.ip) continue;
    if (entry.kind === "host" && entry.host === t.host) return text;
    // one or more labels below the domain: never the domain itself, never a name that only ends alike
    if (entry.kind === "below" && t.host.endsWith(`.${entry.domain}`)) return text;
  }
  return undefined;
}

/** Whether an address is listed as an IP (or in a CIDR) for this port: then it may be reached even if private. */
export function addressListed(p: CompiledPolicy, addr: number[], port: number): boolean {
  return p.entries.some(
    ({ entry }) => entry.kind === "ip" && portOk(entry, port) && inCidr(addr, entry.bytes, entry.bits),
  );
}

const V4_CLASSES: [string, number, string][] = [
  ["0.0.0.0", 8, "an unspecified"],
  ["10.0.0.0", 8, "a private"],
  ["100.64.0.0", 10, "a private (shared)"],
  ["127.0.0.0", 8, "a loopback"],
  ["169.254.0.0", 16, "a link-local"],
  ["172.16.0.0", 12, "a private"],
  ["192.0.0.0", 24, "a reserved"],
  ["192.168.0.0", 16, "a private"],
  ["198.18.0.0", 15, "a reserved"],
  ["224.0.0.0", 4, "a multicast"],
  ["240.0.0.0", 4, "a reserved"],
];
const V6_CLASSES: [string, number, string][] = [
  ["::", 128, "an unspecified"],
  ["::1", 128, "a loopback"],
  ["fe80::", 10, "a link-local"],
  ["fc00::", 7, "a private"],
  ["ff00::", 8, "a multicast"],
];
const parsed = (list: [string, number, string][]) =>
  list.map(([a, bits, what]) => ({ net: parseIp(a) ?? [], bits, what }));
const V4 = parsed(V4_CLASSES);
const V6 = parsed(V6_CLASSES);

/**
 * Why an address may not be reached unless listed ("a loopback", "a private", ...), or null
 * for a public one. IPv4 inside IPv6 (mapped, compatible, NAT64) is judged as IPv4.
 */
export function addressClass(addr: number[]): string | null {
  if (addr.length === 16) {
    const first10Zero = addr.slice(0, 10).every((b) => b === 0);
    const mapped = first10Zero && addr[10] === 0xff && addr[11] === 0xff;
    const nat64 = addr[0] === 0 && addr[1] === 0x64 && addr[2] === 0xff && addr[3] === 0x9b;
    const compat = first10Zero && addr[10] === 0 && addr[11] === 0 && addr.slice(12).some((b) => b !== 0);
    if (mapped || nat64 || (compat && !(addr[15] === 1 && addr.slice(12, 15).every((b) => b === 0))))
      return addressClass(addr.slice(12));
    for (const c of V6) if (inCidr(addr, c.net, c.bits)) return c.what;
    return null;
  }
  for (const c of V4) if (inCidr(addr, c.net, c.bits)) return c.what;
  return null;
}

export function formatIp(addr: number[]): string {
  if (addr.length === 4) return addr.join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((addr[i] ?? 0) << 8) | (addr[i + 1] ?? 0)).toString(16));
  // the longest run of zero groups becomes ::
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

/** What a plain HTTP request must also satisfy: the rules naming its host. */
export function rulesFor(p: CompiledPolicy, t: Target): CompiledPolicy["rules"] {
  return p.rules.filter((r) => {
    const e = parseNetworkEntry(r.host);
    if (typeof e === "string") return false;
    if (e.kind === "ip") return t.ip !== null && inCidr(t.ip, e.bytes, e.bits);
    if (t.ip) return false;
    return e.kind === "host" ? e.host === t.host : t.host.endsWith(`.${e.domain}`);
  });
}

/**
 * Whether a plain HTTP request passes the rules naming its host (none: it passes). The
 * path is compared without its query; one with dot segments (also %2e-encoded) never
 * passes a rule, since the upstream would resolve them past the prefix.
 */
export function rulesAllow(rules: CompiledPolicy["rules"], method: string, target: string): boolean {
  if (rules.length === 0) return true;
  const path = target.split(/[?#]/)[0] ?? "";
  const segments = path.replace(/%2e/gi, ".").split(/\/|%2f|\\/i);
  if (segments.some((s) => s === "." || s === "..")) return false;
  return rules.some(
    (r) =>
      (!r.methods || r.methods.includes(method)) && (!r.paths || r.paths.some((pre) => path.startsWith(pre))),
  );
}
