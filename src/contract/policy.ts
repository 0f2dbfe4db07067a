// An agent's sandbox policy: which paths beyond its home it may read and write, which hosts
// its programs may reach. The schema itself refuses what is unsafe ("*", "*.com").
import { z } from "zod";

const label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const hostRe = new RegExp(`^(?:${label})(?:\\.${label})*$`);
const octet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const ipv4Re = new RegExp(`^${octet}(\\.${octet}){3}$`);

/** The bytes of an IPv4 address (4) or an IPv6 one (16), or null when s is neither. */
export function parseIp(s: string): number[] | null {
  if (ipv4Re.test(s)) return s.split(".").map(Number);
  if (!s.includes(":") || !/^[0-9a-f:.]+$/i.test(s)) return null;
  let tail: number[] = [];
  let text = s;
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const v4 = parseIp(s.slice(lastColon + 1));
    if (!v4 || v4.length !== 4) return null;
    tail = v4;
    text = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string): number[] | null => {
    if (h === "") return [];
    const out: number[] = [];
    for (const g of h.split(":")) {
      if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = groups(halves[0] ?? "");
  const rest = halves.length === 2 ? groups(halves[1] ?? "") : [];
  if (!head || !rest) return null;
  const missing = 8 - head.length - rest.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const all = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...rest];
  const bytes = all.flatMap((g) => [g >> 8, g & 255]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** One network entry, parsed: a host, every host below a domain, or addresses. */
export type NetworkEntry =
  | { kind: "host"; host: string; port?: number }
  /** `*.domain`: one or more labels below `domain`, never `domain` itself. */
  | { kind: "below"; domain: string; port?: number }
  /** An IP (bits = the whole address) or a CIDR. */
  | { kind: "ip"; bytes: number[]; bits: number; port?: number };

function portOf(text: string): number | string {
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65535)
    return "has a port outside 1-65535";
  return Number(text);
}

/** The entry parsed, or why it is refused (a string). */
export function parseNetworkEntry(entry: string): NetworkEntry | string {
  const e = entry.toLowerCase();
  if (e.trim() !== e || e.length === 0 || e.length > 260) return "is empty or has spaces";
  let host = e;
  let port: number | undefined;
  if (e.startsWith("[")) {
    // [IPv6] or [IPv6]:port
    const close = e.indexOf("]");
    if (close < 0) return "is not a valid IPv6 address";
    host = e.slice(1, close);
    const after = e.slice(close + 1);
    if (after !== "") {
      if (!after.startsWith(":")) return "is not a valid IPv6 address";
      const p = portOf(after.slice(1));
      if (typeof p === "string") return p;
      port = p;
    }
    const bytes = parseIp(host);
    if (!bytes || bytes.length !== 16) return "is not a valid IPv6 address";
    return { kind: "ip", bytes, bits: 128, ...(port ? { port } : {}) };
  }
  const slash = e.indexOf("/");
  if (slash >= 0) {
    const bytes = parseIp(e.slice(0, slash));
    const bitsText = e.slice(slash + 1);
    if (!bytes) return "is not a valid CIDR (an address, /, a prefix length)";
    const bits = Number(bitsText);
    if (!/^\d{1,3}$/.test(bitsText) || bits > bytes.length * 8) return "has a prefix length out of range";
    if (bits === 0) return "allows every address; name the networks";
    return { kind: "ip", bytes, bits };
  }
  const v6 = parseIp(e);
  if (v6 && v6.length === 16) return { kind: "ip", bytes: v6, bits: 128 };
  const colon = e.lastIndexOf(":");
  if (colon !== -1) {
    const p = portOf(e.slice(colon + 1));
    if (typeof p === "string") return p;
    port = p;
    host = e.slice(0, colon);
  }
  const withPort = port ? { port } : {};
  if (host === "*") return "allows every host; name the hosts";
  if (host.startsWith("*.")) {
    const rest = host.slice(2);
    if (!hostRe.test(rest)) return "is not a host pattern";
    if (!rest.includes(".")) return "allows a whole top-level domain; name a domain under it";
    return { kind: "below", domain: rest, ...withPort };
  }
  if (host.includes("*")) return "may use * only as its first label (*.example.com)";
  const v4 = parseIp(host);
  if (v4) return { kind: "ip", bytes: v4, bits: 32, ...withPort };
  if (/^\d+(\.\d+)*$/.test(host)) return "is not a valid IPv4 address (write an address as a.b.c.d)";
  if (host.endsWith(".")) return "ends with a dot; write the name without it";
  if (!hostRe.test(host)) return "is not a host name";
  // a last label that is a number (0x7f000001, 1.0x7f): an address in another spelling, as URLs parse it
  if (/(?:^|\.)(?:0x[0-9a-f]*|\d+)$/.test(host))
    return "is an IPv4 address in another spelling, or no host name (write an address as a.b.c.d)";
  return { kind: "host", host, ...withPort };
}

/** Why a network entry is refused, or null when it is fine. */
export function networkEntryProblem(entry: string): string | null {
  const r = parseNetworkEntry(entry);
  return typeof r === "string" ? r : null;
}

/** A rule's host: a host name or `*.domain`, as in the allow list but without a port. */
function ruleHostProblem(host: string): string | null {
  const r = parseNetworkEntry(host);
  if (typeof r === "string") return r;
  if (r.port !== undefined) return "names a port; a rule's host has none";
  if (r.kind === "ip" && r.bits !== r.bytes.length * 8) return "is a CIDR; a rule names a host or an address";
  return null;
}

const httpMethod = z.string().regex(/^[A-Z]{1,16}$/, "must be an HTTP method in capitals (GET, POST, ...)");

const NetworkRule = z
  .object({
    host: z.string().superRefine((v, ctx) => {
      const problem = ruleHostProblem(v);
      if (problem) ctx.addIssue({ code: "custom", message: `"${v}" ${problem}` });
    }),
    methods: z.array(httpMethod).min(1).max(16).optional(),
    paths: z
      .array(
        z
          .string()
          .min(1)
          .max(1024)
          .refine((p) => p.startsWith("/") && !/[\s#?]/.test(p), {
            message: "must be a path prefix starting with / (no spaces, ? or #)",
          }),
      )
      .min(1)
      .max(64)
      .optional(),
  })
  .strict();

const utf8 = new TextEncoder();

const boxPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith("/") && !p.includes("\0") && !p.split("/").includes(".."), {
    message: "must be an absolute path in the box without '..'",
  })
  .refine((p) => p.split("/").every((c) => utf8.encode(c).length <= 255), {
    message: "has a name longer than 255 bytes",
  });

export const SandboxPolicy = z
  .object({
    files: z
      .object({
        read: z.array(boxPath).max(64).default([]),
        write: z.array(boxPath).max(64).default([]),
      })
      .strict()
      .default({ read: [], write: [] }),
    network: z
      .object({
        /** allow-list (the default): only `allow`; open: every host whose address is public (never loopback, private or the server's own). */
        mode: z.enum(["allow-list", "open"]).optional(),
        allow: z
          .array(
            z.string().superRefine((v, ctx) => {
              const problem = networkEntryProblem(v);
              if (problem) ctx.addIssue({ code: "custom", message: `"${v}" ${problem}` });
            }),
          )
          .max(128)
          .default([]),
        /** Narrows hosts to methods and path prefixes, for plain HTTP (a tunnel cannot be checked). */
        rules: z.array(NetworkRule).max(64).optional(),
        /**
         * Hosts outside `allow` a person is asked about, per connection of a run (the
         * connection is held until an approval is decided): patterns as in `allow`, or "*" for all.
         */
        ask: z
          .union([
            z.literal("*"),
            z
              .array(
                z.string().superRefine((v, ctx) => {
                  const problem = v === "*" ? null : networkEntryProblem(v);
                  if (problem) ctx.addIssue({ code: "custom", message: `"${v}" ${problem}` });
                }),
              )
              .max(128),
          ])
          .optional(),
      })
      .strict()
      .default({ allow: [] }),
  })
  .strict()
  .meta({
    id: "SandboxPolicy",
    description:
      "Which paths beyond its home an agent may read and write, which hosts it may reach; absent parts mean nothing beyond the home",
  });

/** A policy as stored and shown: every part present. */
export type SandboxPolicy = z.output<typeof SandboxPolicy>;
