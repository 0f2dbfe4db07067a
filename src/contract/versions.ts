// Versions of an agent's spec (its sandbox policy included), and its canary.
import { z } from "zod";
import { idOf, items } from "./common.js";
import { SandboxPolicy } from "./policy.js";
import { specAnswer, specFields } from "./agents.js";

export const VersionSummary = z
  .object({
    version: z.number(),
    created_at: z.string(),
    created_by: z
      .string()
      .nullable()
      .describe("the email of who wrote it (null: written before authors were kept)"),
    current: z.boolean(),
    canary_share: z.number().optional().describe("the share of runs it takes as the agent's canary"),
  })
  .meta({ id: "VersionSummary" });
export const VersionList = items(VersionSummary, "VersionList");

/** One version: the whole spec, sandbox policy included. */
export const Version = z
  .object({
    agent_id: z.string(),
    version: z.number(),
    created_at: z.string(),
    created_by: z.string().nullable(),
    current: z.boolean(),
    canary_share: z.number().optional(),
    ...specAnswer,
    sandbox_policy: SandboxPolicy,
  })
  .meta({ id: "Version" });

export const VersionCreateRequest = z
  .object({
    ...specFields,
    sandbox_policy: SandboxPolicy.optional(),
    make_current: z
      .boolean()
      .default(false)
      .describe("false (default): written beside the current one, to run by number, canary or promote"),
  })
  .strict()
  .meta({ id: "VersionCreateRequest" });

export const VersionCreated = z.object({ version: z.number() }).meta({ id: "VersionCreated" });

export const VersionParams = z.object({
  id: idOf("agt"),
  n: z.coerce.number().int().min(1),
});

export const CurrentRequest = z
  .object({ version: z.number().int().min(1) })
  .strict()
  .meta({ id: "CurrentRequest" });

export const Canary = z
  .object({
    agent_id: z.string(),
    current: z.number().nullable(),
    canary: z
      .object({ version: z.number(), share: z.number(), started_by: z.string(), started_at: z.string() })
      .nullable(),
    stats: z
      .array(
        z.object({
          version: z.number(),
          runs: z.number(),
          failures: z.number(),
          usd: z.number(),
        }),
      )
      .describe("each version's runs, failures and cost since the canary started (or all, without one)"),
  })
  .meta({ id: "Canary" });

export const CanaryRequest = z
  .object({
    version: z.number().int().min(1).optional(),
    share: z
      .number()
      .gt(0, "must be above 0")
      .lt(1, "must be below 1 (to send every run, make the version current)")
      .optional(),
  })
  .strict()
  .refine((b) => (b.version === undefined) === (b.share === undefined), {
    message: "give both version and share, or neither to end the canary",
    path: ["share"],
  })
  .meta({ id: "CanaryRequest" });

export const Approval = z
  .object({
    id: z.string(),
    run_id: z.string(),
    agent_id: z.string(),
    tool_call_id: z.string().describe("the model's id of the call"),
    tool: z
      .string()
      .describe("the tool called; `egress`: a connection held by the sandbox policy's network.ask"),
    arguments: z.unknown().describe("the call's arguments as the policy decided on them (redacted)"),
    args_sha256: z.string().describe("SHA-256 of the canonical arguments: a decision must carry it"),
    policy_version: z.number().nullable().describe("the spec version whose tool policy asked"),
    policies: z.array(z.string()).describe("the permits that asked"),
    deciders: z
      .array(z.string())
      .describe(
        "who the asking permits name to decide (emails, roles), beside owners and admins; empty: owners, admins and editors",
      ),
    may_decide: z
      .boolean()
      .optional()
      .describe("in an answer to a person: whether they may decide it (while it waits)"),
    status: z.enum(["waiting", "allowed", "denied", "expired"]),
    message: z.string().nullable().describe("the decider's message (a denial's is the model's answer)"),
    decided_by: z.string().optional(),
    created_at: z.string(),
    decided_at: z.string().nullable(),
  })
  .meta({ id: "Approval" });
export const ApprovalList = items(Approval, "ApprovalList");

export const ApprovalDecision = z
  .object({
    decision: z.enum(["allow", "deny"]),
    message: z.string().max(4096).optional().describe("said to the model with a denial"),
    args_sha256: z.string().regex(/^[0-9a-fA-F]{64}$/, "must be the approval's args_sha256 (64 hex digits)"),
    add_to_policy: z
      .boolean()
      .optional()
      .describe(
        "with allow, on an egress approval (tool `egress`): also add its host:port to the agent's network allow list, as a new version by the decider",
      ),
  })
  .strict()
  .meta({ id: "ApprovalDecision" });

export const ApprovalListQuery = z
  .object({
    status: z.enum(["waiting", "allowed", "denied", "expired"]).optional(),
    mine: z
      .enum(["true", "false"])
      .optional()
      .describe("only the approvals waiting for the caller's decision"),
  })
  .strict();

const EvalExpect = z
  .object({
    contains: z.string().min(1).max(4096).optional(),
    equals: z.string().max(65536).optional(),
    regex: z
      .string()
      .min(1)
      .max(512)
      .refine((r) => {
        try {
          new RegExp(r);
          return true;
        } catch {
          return false;
        }
      }, "must be a valid regular expression")
      .optional(),
    tool_called: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe("a tool the run must have called (and been allowed)"),
  })
  .strict()
  .refine((e) => Object.values(e).some((v) => v !== undefined), { message: "give at least one expectation" });

export const EvalCase = z
  .object({
    input: z
      .string()
      .min(1)
      .max(256 * 1024),
    expect: EvalExpect,
  })
  .strict()
  .meta({ id: "EvalCase" });

export const EvalSuiteRequest = z
  .object({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "must be lowercase letters, digits, _ . - (at most 64)"),
    cases: z.array(EvalCase).min(1).max(200),
    pass_rate: z.number().min(0).max(1).describe("the share of cases that must pass, 0-1"),
  })
  .strict()
  .meta({ id: "EvalSuiteRequest" });

export const EvalSuite = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    name: z.string(),
    cases: z.array(EvalCase),
    pass_rate: z.number(),
    created_by: z.string(),
    created_at: z.string(),
  })
  .meta({ id: "EvalSuite" });
export const EvalSuiteList = items(EvalSuite, "EvalSuiteList");

export const EvaluateRequest = z
  .object({ suite: z.string().min(1).max(64).describe("the suite's name") })
  .strict()
  .meta({ id: "EvaluateRequest" });

export const EvalRunCase = z.object({
  input: z.string(),
  run_id: z.string().nullable(),
  status: z.string().describe("the run's status, or pending"),
  passed: z.boolean().nullable(),
  reasons: z.array(z.string()).describe("what did not hold"),
});

export const EvalRun = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    suite: z.string(),
    version: z.number(),
    status: z.enum(["running", "passed", "failed", "error"]),
    passed: z.boolean().nullable().describe("null while running"),
    pass_rate: z.number().nullable().describe("the share of cases that passed, once ended"),
    required_pass_rate: z.number(),
    cases: z.array(EvalRunCase),
    started_by: z.string(),
    created_at: z.string(),
    ended_at: z.string().nullable(),
  })
  .meta({ id: "EvalRun" });

export const EvalGateRequest = z
  .object({
    suite: z.string().min(1).max(64).nullable().describe("a suite's name, or null to turn the gate off"),
  })
  .strict()
  .meta({ id: "EvalGateRequest" });
export const EvalGate = z
  .object({ agent_id: z.string(), eval_gate: z.string().nullable() })
  .meta({ id: "EvalGate" });
export const EvalGateHistory = z
  .object({
    agent_id: z.string(),
    eval_gate: z.string().nullable(),
    history: z
      .array(
        z.object({
          revision: z.number().int(),
          eval_gate: z.string().nullable().describe("the suite after the change; null: turned off"),
          by: z.string().describe("who made the change"),
          at: z.string(),
        }),
      )
      .describe("every change of the gate, oldest first"),
  })
  .meta({ id: "EvalGateHistory" });

export const EvidenceRequest = z
  .object({
    from: z.iso.datetime({ offset: true }).describe("the period's start (ISO-8601)"),
    to: z.iso.datetime({ offset: true }).describe("the period's end, excluded"),
    agent_ids: z.array(idOf("agt")).max(500).optional().describe("only these agents (default: all)"),
  })
  .strict()
  .meta({ id: "EvidenceRequest" });

export const EvidenceCreated = z
  .object({
    id: z.string(),
    sha256: z.string().describe("SHA-256 of the gzipped pack: keep it to check the download"),
    bytes: z.number(),
  })
  .meta({ id: "EvidenceCreated" });

export const GuardrailsRequest = z
  .object({
    tool_policy: z
      .string()
      .max(64 * 1024)
      .optional()
      .describe(
        "Cedar policies (the tool policy's schema) every tool decision must also pass; its forbids deny (absent: kept)",
      ),
    network_deny: z
      .array(z.string().min(1).max(300))
      .max(1000)
      .optional()
      .describe(
        "hosts (example.com), domains below (*.example.com), addresses or CIDRs (with :port or not) the egress proxy refuses to every agent, whatever its policy allows (absent: kept)",
      ),
    retention_days: z
      .number()
      .int()
      .min(1)
      .max(36500)
      .nullable()
      .optional()
      .describe("days run outputs and traces are kept, then deleted; null: kept for ever (absent: kept)"),
  })
  .strict()
  .meta({ id: "GuardrailsRequest" });
export const Guardrails = z
  .object({
    org_id: z.string(),
    tool_policy: z.string(),
    network_deny: z.array(z.string()),
    retention_days: z.number().nullable(),
    updated_by: z.string().nullable(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: "Guardrails" });
