// The operator's policy file (STATE_ROOT/policy.yaml, or WARREN_POLICY): the workspace classes
// agents may name, and the permission bundles (sets of tools, hosts and secrets) a flow
// contract's agents take. One schema reads it; a file that does not hold stops the server with the
// file, the place and the fix.
import fs from "node:fs";
import { parse, YAMLParseError } from "yaml";
import { z } from "zod";

export const WORKSPACE_SCOPES = ["per-agent", "per-flow-instance"] as const;

/** A class's name, as agents' specs name it. */
export const workspaceClassName = z
  .string()
  .regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "must be lowercase letters, digits, _ and - (at most 64), starting with a letter",
  );

export const WorkspaceClass = z
  .object({
    description: z.string().max(2000).default(""),
    workspace_scope: z.enum(WORKSPACE_SCOPES),
  })
  .strict();
export type WorkspaceClass = z.output<typeof WorkspaceClass>;

/** A permission bundle: what the spec of an agent that takes it may ask for, and no more. */
export const PermissionBundle = z
  .object({
    description: z.string().max(2000).default(""),
    /** Tool names (a builtin's, an http tool's, an MCP server's). */
    tools: z.array(z.string().min(1).max(64)).max(256).default([]),
    /** Hosts (`host`, `host:port`, `*.domain`) of its sandbox policy and its tools' URLs. */
    hosts: z.array(z.string().min(1).max(253)).max(256).default([]),
    /** Secrets' names its spec names (model keys, tools' headers). */
    secrets: z.array(z.string().min(1).max(128)).max(256).default([]),
  })
  .strict();
export type PermissionBundle = z.output<typeof PermissionBundle>;

/** The policy file: its workspace classes and permission bundles; other sections are left as they are. */
export const PolicyFile = z
  .object({
    workspace_classes: z.record(workspaceClassName, WorkspaceClass).default({}),
    permission_bundles: z.record(workspaceClassName, PermissionBundle).default({}),
  })
  .loose();

export interface Policy {
  /** Where it was read from, or null when no file was there (no class is declared). */
  file: string | null;
  classes: ReadonlyMap<string, WorkspaceClass>;
  /** The permission bundles by name (none when absent). */
  bundles?: ReadonlyMap<string, PermissionBundle>;
}

export class PolicyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PolicyError";
  }
}

/**
 * Reads the policy file. `explicit`: named by WARREN_POLICY, so it must exist; the default
 * STATE_ROOT/policy.yaml may be absent (then no class is declared).
 */
export function loadPolicy(file: string, explicit: boolean): Policy {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" && !explicit)
      return { file: null, classes: new Map() };
    throw new PolicyError(`the policy file ${file} cannot be read: ${(err as Error).message}`);
  }
  return parsePolicy(text, file);
}

export function parsePolicy(text: string, file: string): Policy {
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100 });
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line})` : "";
    throw new PolicyError(
      `the policy file ${file} is not YAML${where}: ${(err as Error).message.split("\n")[0]}`,
    );
  }
  const r = PolicyFile.safeParse(doc ?? {});
  if (!r.success) {
    const msgs = r.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.map(String).join(".") || "(the file)"}: ${i.message}`);
    throw new PolicyError(`the policy file ${file} does not hold: ${msgs.join("; ")}`);
  }
  return {
    file,
    classes: new Map(Object.entries(r.data.workspace_classes)),
    bundles: new Map(Object.entries(r.data.permission_bundles)),
  };
}
