// An agent's sandbox policy: which paths beyond its home it may read and write, which hosts
// its programs may reach. The schema itself refuses what is unsafe ("*", "*.com").
import { z } from "zod";

const label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const hostRe = new RegExp(`^(?:${label})(?:\\.${label})*$`);
const ipv4Re = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/** Why a network entry is refused, or null when it is fine. */
export function networkEntryProblem(entry: string): string | null {
  const e = entry.trim().toLowerCase();
  if (e !== entry.toLowerCase() || e.length === 0 || e.length > 260) return "is empty or has spaces";
  let host = e;
  const colon = e.lastIndexOf(":");
  if (colon !== -1) {
    const port = e.slice(colon + 1);
    if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
      return "has a port outside 1-65535";
    host = e.slice(0, colon);
  }
  if (host === "*") return "allows every host; name the hosts";
  if (host.startsWith("*.")) {
    const rest = host.slice(2);
    if (!hostRe.test(rest)) return "is not a host pattern";
    if (!rest.includes(".")) return "allows a whole top-level domain; name a domain under it";
    return null;
  }
  if (host.includes("*")) return "may use * only as its first label (*.example.com)";
  if (ipv4Re.test(host)) return null;
  if (/^\d+(\.\d+)*$/.test(host)) return "is not a valid IPv4 address";
  if (!hostRe.test(host)) return "is not a host name";
  return null;
}

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
        allow: z
          .array(
            z.string().superRefine((v, ctx) => {
              const problem = networkEntryProblem(v);
              if (problem) ctx.addIssue({ code: "custom", message: `"${v}" ${problem}` });
            }),
          )
          .max(128)
          .default([]),
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
