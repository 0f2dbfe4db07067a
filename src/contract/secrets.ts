import { z } from "zod";
import { idOf, items } from "./common.js";
import { networkEntryProblem } from "./policy.js";

/** Names a secret may not take: the variables warren sets itself, and ones that change how programs start. */
export const RESERVED_SECRET_NAMES = [
  "HOME",
  "PORT",
  "PATH",
  "LANG",
  "TMPDIR",
  "USER",
  "LOGNAME",
  "SHELL",
  "PWD",
  "OLDPWD",
  "TERM",
  "IFS",
  "ENV",
  "BASH_ENV",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
] as const;
export const RESERVED_SECRET_PREFIXES = ["WARREN_", "LD_", "LC_", "BASH_FUNC_"] as const;

/** The least and most bytes a value may hold (UTF-8). Shorter values would redact ordinary text. */
export const SECRET_VALUE_MIN_BYTES = 8;
export const SECRET_VALUE_MAX_BYTES = 16 * 1024;

const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;

export const secretName = z
  .string()
  .max(128, "must be at most 128 characters")
  .regex(/^[A-Z_][A-Z0-9_]*$/, "must match [A-Z_][A-Z0-9_]* (it is the environment variable's name)")
  .refine(
    (n) =>
      !(RESERVED_SECRET_NAMES as readonly string[]).includes(n) &&
      !RESERVED_SECRET_PREFIXES.some((p) => n.startsWith(p)),
    `is one of warren's own variables (${RESERVED_SECRET_NAMES.join(", ")}, ${RESERVED_SECRET_PREFIXES.map((p) => `${p}*`).join(", ")})`,
  );

export const secretValue = z
  .string()
  .refine((v) => !v.includes("\0"), "must not hold NUL")
  .refine((v) => utf8Bytes(v) >= SECRET_VALUE_MIN_BYTES, `must be at least ${SECRET_VALUE_MIN_BYTES} bytes`)
  .refine((v) => utf8Bytes(v) <= SECRET_VALUE_MAX_BYTES, `must be at most ${SECRET_VALUE_MAX_BYTES} bytes`);

const description = z
  .string()
  .max(1000, "must be at most 1000 characters")
  // eslint-disable-next-line no-control-regex -- refusing control characters but newline and tab
  .refine((s) => !/[\u0000-\u0008\u000b-\u001f\u007f]/.test(s), "must not hold control characters");

export const SecretGrant = z
  .object({
    scope: z.enum(["org", "guild", "agent"]),
    id: z.string().regex(/^(org|gld|agt)_[0-9a-z]{16}$/, "must be an org_, gld_ or agt_ id"),
  })
  .strict()
  .refine((g) => g.id.startsWith({ org: "org_", guild: "gld_", agent: "agt_" }[g.scope]), {
    message: "the id must be of the scope's kind (org_, gld_ or agt_)",
    path: ["id"],
  })
  .meta({ id: "SecretGrant", description: "who a secret reaches: its organisation, a guild or an agent" });

const grants = z.array(SecretGrant).max(256);

/** The official API host of each provider: where a model key with no hosts of its own may go. */
export const OFFICIAL_MODEL_HOSTS: Record<string, readonly string[]> = {
  anthropic: ["api.anthropic.com"],
  openai: ["api.openai.com"],
};

/**
 * A host a model key may be sent to: a DNS name or an IP address (IPv6 in brackets), with a
 * port when it is not the scheme's default; lower-cased, without a trailing dot.
 */
const hostText = z
  .string()
  .max(260)
  .transform((h) =>
    h
      .trim()
      .toLowerCase()
      .replace(/\.(?=(:\d+)?$)/, ""),
  );
const modelHostRe =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::(?:[1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5]))?$/;

/**
 * Why a host is refused for a secret of this use, or null. Model: a host name or IP address
 * with an optional :port. Egress: a host pattern as a network policy's allow list takes it
 * (`api.example.com`, `*.example.com`, an address or a CIDR, each with an optional :port).
 */
export function secretHostProblem(use: string, host: string): string | null {
  if (use === "egress") {
    const p = networkEntryProblem(host);
    return p === null ? null : `${JSON.stringify(host)} ${p}`;
  }
  return modelHostRe.test(host)
    ? null
    : "must be a host name or IP address with an optional :port (no scheme, no path), such as api.openai.com or 10.0.0.5:8000";
}

/** Why a secret's hosts are refused (a bad one, or none for use egress), or undefined. */
export function secretHostsProblem(s: {
  use?: string | undefined;
  alias_of?: string | undefined;
  hosts?: readonly string[] | undefined;
}): string | undefined {
  if (s.use === "egress" && s.alias_of === undefined && (s.hosts ?? []).length === 0)
    return "a secret of use egress is bound to at least one host";
  for (const h of s.hosts ?? []) {
    const p = secretHostProblem(s.use ?? "env", h);
    if (p) return p;
  }
  return undefined;
}

const hosts = z.array(hostText).max(32);

/**
 * How a secret is used: `env` reaches the agent's commands as an environment variable;
 * `model` is a provider key that only the model gateway in the server reads; `tool` is a
 * credential that only the tool gateway in the server reads, for the headers of http and
 * MCP tools. Neither `model` nor `tool` ever reaches a command's environment, a terminal or
 * a box. Set at creation; the one change is env to tool (PATCH, by an owner or admin).
 */
export const SecretUse = z.enum(["env", "model", "tool", "egress"]).meta({
  id: "SecretUse",
  description:
    "env: reaches commands as an environment variable; model: a model provider's key, read only by the model gateway; tool: a tool's credential, read only by the tool gateway (http and MCP headers); egress: commands see only a marker in WARREN_SECRET_<NAME>, and the egress proxy puts the value in place of it in the headers of requests to the secret's hosts",
});

/** A secret as every member reads it: never its value. */
export const Secret = z
  .object({
    id: z.string(),
    org_id: z.string(),
    name: z.string().describe("the environment variable it becomes (use env)"),
    description: z.string(),
    use: SecretUse,
    alias_of: z.string().nullable().describe("the secret whose value this alias carries, or null"),
    grants: z.array(SecretGrant),
    hosts: z
      .array(z.string())
      .describe(
        "use model: the hosts its value may be sent to; empty: only the official API host of the model's provider. Use egress: the host patterns the proxy puts its value in requests to (an alias shows those of the secret it names)",
      ),
    stored_by_agent: z.string().nullable().describe("the agent that stored it from its box, or null"),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "Secret" });
export const SecretList = items(Secret, "SecretList");

export const SecretCreateRequest = z
  .object({
    org_id: idOf("org"),
    name: secretName,
    description: description.optional().describe("default empty"),
    value: secretValue.optional().describe("the value; give this or alias_of. Never returned"),
    alias_of: idOf("sec").optional().describe("make this name an alias of another secret's value"),
    use: SecretUse.optional().describe("default env; an alias takes its secret's use"),
    grants: grants.optional().describe("default none"),
    hosts: hosts
      .optional()
      .describe(
        "use model: the hosts its value may be sent to (default none: only the official API host of the provider of the model that names it; a key for an openai-compatible base_url needs its host here). Use egress (required, at least one): the host patterns (as a network allow list's: api.example.com, *.example.com, with an optional :port) the proxy puts its value in requests to",
      ),
  })
  .strict()
  .superRefine((b, ctx) => {
    for (const [i, h] of (b.hosts ?? []).entries()) {
      const problem = secretHostProblem(b.use ?? "env", h);
      if (problem) ctx.addIssue({ code: "custom", message: problem, path: ["hosts", i] });
    }
  })
  .refine((b) => (b.value === undefined) !== (b.alias_of === undefined), {
    message: "give exactly one of value or alias_of",
    path: ["value"],
  })
  .refine(
    (b) => b.hosts === undefined || ((b.use === "model" || b.use === "egress") && b.alias_of === undefined),
    {
      message: "hosts are for a secret of use model or egress (an alias takes those of the secret it names)",
      path: ["hosts"],
    },
  )
  .refine((b) => b.use !== "egress" || b.alias_of !== undefined || (b.hosts ?? []).length > 0, {
    message: "a secret of use egress is bound to at least one host",
    path: ["hosts"],
  })
  .meta({ id: "SecretCreateRequest" });

export const SecretUpdateRequest = z
  .object({
    description: description.optional(),
    grants: grants.optional(),
    use: z
      .literal("tool")
      .optional()
      .describe("moves a secret of use env to tool (owners and admins); no other change of use is allowed"),
    hosts: hosts
      .optional()
      .describe(
        "use model or egress: replaces the hosts its value may be sent to (owners and admins only; egress keeps at least one)",
      ),
  })
  .strict()
  .meta({ id: "SecretUpdateRequest" });

export const SecretListQuery = z.object({ org_id: idOf("org").optional() }).strict();

/** A person's answer to an agent's secret_request (POST /api/approvals/:id/secret). */
export const SecretRequestAnswer = z
  .object({
    value: secretValue.describe(
      "the secret's value: stored sealed as a secret of the organisation, granted to the asking agent; never returned, never in the transcript",
    ),
    args_sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "must be the approval's args_sha256 (64 hex digits)")
      .describe("the request's args_sha256, as its approval shows it"),
  })
  .strict()
  .meta({ id: "SecretRequestAnswer" });
