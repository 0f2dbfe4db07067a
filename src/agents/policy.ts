// An agent's sandbox policy: which paths beyond its home it may read and write, which hosts
// its programs may reach. The schema itself refuses what is unsafe ("*", "*.com").
import { z } from "zod";
import { BOX_PATHS } from "../boxes/paths.js";

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

const boxPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith("/") && !p.includes("\0") && !p.split("/").includes(".."), {
    message: "must be an absolute path in the box without '..'",
  })
  .refine((p) => p.split("/").every((c) => Buffer.byteLength(c) <= 255), {
    message: "has a name longer than 255 bytes",
  });

export const sandboxPolicySchema = z
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
  .strict();

export type SandboxPolicy = z.output<typeof sandboxPolicySchema>;

export const emptyPolicy = (): SandboxPolicy => ({ files: { read: [], write: [] }, network: { allow: [] } });

/** What every command may read and execute, whatever its policy: the system and the box's shared folders. */
export const SYSTEM_READ: readonly string[] = [
  ...BOX_PATHS.system,
  BOX_PATHS.etc,
  BOX_PATHS.proc,
  BOX_PATHS.data,
  BOX_PATHS.contracts,
];

/**
 * A command's file access from its agent's sandbox policy: the system read-only, its
 * home, /tmp and /dev read-write, the policy's paths on top; a run's /agent read-only;
 * on a trust: shared machine the other homes read-only (their modes allow it there).
 * Beyond these lists boxd-spawn lets every folder be listed (names, never contents), so
 * `ls /` works; folders closed by their modes (other homes, 0700) stay closed.
 */
export function fileAccessOf(
  policy: SandboxPolicy,
  where: { home: string; shared: boolean; agentDir?: boolean },
): { read: string[]; write: string[] } {
  const read = [...SYSTEM_READ];
  if (where.shared) read.push(BOX_PATHS.homes);
  if (where.agentDir) read.push(BOX_PATHS.agent);
  const write = [where.home, BOX_PATHS.tmp, BOX_PATHS.dev];
  return {
    read: [...new Set([...read, ...policy.files.read])],
    write: [...new Set([...write, ...policy.files.write])],
  };
}
