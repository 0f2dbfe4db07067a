// The egress decision: whether an agent's network policy lets a connection through to a
// host and port. Where an address may be reached at all is the address rule's (src/net/rule.ts).
import { parseNetworkEntry, type NetworkEntry, type SandboxPolicy } from "../contract/policy.js";
import { inRange, normaliseHost, unmapRange } from "../net/rule.js";

type Network = SandboxPolicy["network"];

/** A policy's network part, parsed (once per change of the policy). */
export interface CompiledPolicy {
  /** The network part as text: equal keys, equal policies. */
  key: string;
  open: boolean;
  entries: { text: string; entry: NetworkEntry }[];
  rules: NonNullable<Network["rules"]>;
  /** The organisation's network deny list: what no policy of its agents may reach. */
  deny: { text: string; entry: NetworkEntry }[];
  /** The hosts outside the list a person is asked about (`network.ask`): all, or those named. */
  ask: { all: boolean; entries: { text: string; entry: NetworkEntry }[] };
}

function parsed(list: readonly string[]): { text: string; entry: NetworkEntry }[] {
  const entries: { text: string; entry: NetworkEntry }[] = [];
  for (const text of list) {
    const entry = parseNetworkEntry(text);
    // stored lists were checked when set; an entry that no longer parses names nothing
    if (typeof entry === "string") continue;
    // an IPv4 network written as IPv6 (::ffff:a.b.c.d) matches the IPv4 targets it is
    if (entry.kind === "ip") entries.push({ text, entry: { ...entry, ...unmapRange(entry) } });
    else entries.push({ text, entry });
  }
  return entries;
}

/** A policy's network part with its organisation's deny list, which bounds it. */
export function compilePolicy(network: Network, deny: readonly string[] = []): CompiledPolicy {
  return {
    key: JSON.stringify([network, deny]),
    open: network.mode === "open",
    entries: parsed(network.allow),
    rules: network.rules ?? [],
    deny: parsed(deny),
    ask: {
      all: network.ask === "*" || (network.ask ?? []).includes("*"),
      entries: network.ask === "*" ? [] : parsed((network.ask ?? []).filter((a) => a !== "*")),
    },
  };
}

/** Where a connection goes: a host name (normalised) or an IP (normalised text), and a port. */
export interface Target {
  host: string;
  port: number;
  /** The bytes of host when it is an IP (IPv4 in IPv6 as IPv4). */
  ip: number[] | null;
}

/**
 * A host as a client wrote it, normalised by the address rule's normaliseHost (every spelling
 * of an address is that address: `127.1`, `2130706433`, `[::ffff:127.0.0.1]`, a trailing dot,
 * upper case); null when it is neither a name nor an IP, or the port is out of range.
 */
export function targetOf(host: string, port: number): Target | null {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  const h = normaliseHost(host);
  if (!h) return null;
  if (h.kind === "ip") return { host: h.text, port, ip: h.bytes };
  return { host: h.name, port, ip: null };
}

function portOk(entry: NetworkEntry, port: number): boolean {
  return entry.port === undefined || entry.port === port;
}

/** The allow entry that names this target, or undefined. */
export function matchEntry(p: CompiledPolicy, t: Target): string | undefined {
  return matchIn(p.entries, t);
}

/**
 * The organisation's deny entry that names this target (its name, or the address it goes
 * to once resolved), or undefined.
 */
export function deniedBy(p: CompiledPolicy, t: Target): string | undefined {
  return matchIn(p.deny, t);
}

/**
 * The organisation's deny list alone, for what the server fetches on an agent's behalf (its
 * http and MCP tools, through the guarded connector): the entry naming a target, or undefined.
 */
export function denyListOf(deny: readonly string[]): (t: Target) => string | undefined {
  const list = parsed(deny);
  return (t) => matchIn(list, t);
}

function matchIn(list: CompiledPolicy["entries"], t: Target): string | undefined {
  for (const { text, entry } of list) {
    if (!portOk(entry, t.port)) continue;
    if (entry.kind === "ip" && t.ip && inRange(t.ip, entry)) return text;
    if (t.ip) continue;
    if (entry.kind === "host" && entry.host === t.host) return text;
    // one or more labels below the domain: never the domain itself, never a name that only ends alike
    if (entry.kind === "below" && t.host.endsWith(`.${entry.domain}`)) return text;
  }
  return undefined;
}

/** What a plain HTTP request must also satisfy: the rules naming its host. */
export function rulesFor(p: CompiledPolicy, t: Target): CompiledPolicy["rules"] {
  return p.rules.filter((r) => {
    const e = parseNetworkEntry(r.host);
    if (typeof e === "string") return false;
    if (e.kind === "ip") return t.ip !== null && inRange(t.ip, unmapRange(e));
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

/** What the policy (bounded by its organisation's deny list) says of a target, the address rule aside. */
export function byPolicy(
  p: CompiledPolicy,
  t: Target,
  plain: { method: string; path: string } | null,
): { ok: true; by: string; ask?: true } | { ok: false; reason: string } {
  const name = `${t.ip?.length === 16 ? `[${t.host}]` : t.host}:${t.port}`;
  const denied = deniedBy(p, t);
  if (denied !== undefined)
    return { ok: false, reason: `${name} is on the organisation's network deny list (${denied})` };
  const by = matchEntry(p, t) ?? (p.open ? "open mode" : undefined);
  // outside the list but named by `ask`: allowed only once a person allows it (src/egress/ask.ts)
  const ask = !by && (p.ask.all || matchIn(p.ask.entries, t) !== undefined);
  if (!by && !ask) return { ok: false, reason: `${name} is not in the agent's network allow list` };
  const rules = rulesFor(p, t);
  if (!plain && rules.length > 0)
    return {
      ok: false,
      reason: `rules narrow ${t.host} to plain HTTP requests they can check; a tunnel cannot be checked`,
    };
  if (plain && !rulesAllow(rules, plain.method, plain.path))
    return { ok: false, reason: `${plain.method} ${plain.path} is not allowed by the rules for ${t.host}` };
  return ask ? { ok: true, by: "ask", ask: true } : { ok: true, by: by as string };
}
