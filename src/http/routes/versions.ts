import { z } from "zod";
import { idParams } from "../../contract/common.js";
import {
  Approval,
  ApprovalDecision,
  ApprovalList,
  ApprovalListQuery,
  Canary,
  CanaryRequest,
  EvalGate,
  EvalGateRequest,
  EvalGateHistory,
  EvalRun,
  EvalSuite,
  EvalSuiteList,
  EvalSuiteRequest,
  EvaluateRequest,
  EvidenceCreated,
  EvidenceRequest,
  Guardrails,
  GuardrailsRequest,
  CurrentRequest,
  Version,
  VersionCreated,
  VersionCreateRequest,
  VersionList,
  VersionParams,
} from "../../contract/versions.js";
import type { Approvals } from "../../approvals/service.js";
import type { Evals } from "../../evals/service.js";
import type { Evidence } from "../../evals/evidence.js";
import type { Guardrails as GuardrailsService } from "../../policy/guardrails.js";
import type { Versions } from "../../versions/service.js";
import { route, type AnyRoute } from "../route.js";

export function versionRoutes(versions: Versions): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/agents/:id/versions",
      id: "versions.list",
      tag: "versions",
      summary:
        "The agent's versions, oldest first: who wrote each and when, which is current, the canary's share",
      params: idParams("agt"),
      response: VersionList,
      handler: async ({ who, params }) => ({ items: await versions.list(who, params.id) }),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/versions/:n",
      id: "versions.get",
      tag: "versions",
      summary: "One version: the whole spec, sandbox policy included",
      params: VersionParams,
      response: Version,
      handler: ({ who, params }) => versions.get(who, params.id, params.n),
    }),
    route({
      method: "POST",
      url: "/api/agents/:id/versions",
      id: "versions.create",
      tag: "versions",
      summary:
        "Write a new version from the current one and the fields given; current only with make_current",
      params: idParams("agt"),
      body: VersionCreateRequest,
      status: 201,
      response: VersionCreated,
      errors: ["access.denied", "egress.forbidden"],
      handler: ({ who, params, body }) => versions.create(who, params.id, body),
    }),
    route({
      method: "PUT",
      url: "/api/agents/:id/current",
      id: "versions.current",
      tag: "versions",
      summary: "Make a version current (promote or roll back); a canary of that version ends",
      params: idParams("agt"),
      body: CurrentRequest,
      response: Version,
      errors: ["access.denied", "version.gate"],
      handler: ({ who, params, body }) => versions.makeCurrent(who, params.id, body.version),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/canary",
      id: "versions.canary.get",
      tag: "versions",
      summary: "The agent's canary, and each version's runs, failures and cost side by side",
      params: idParams("agt"),
      response: Canary,
      handler: ({ who, params }) => versions.canary(who, params.id),
    }),
    route({
      method: "PUT",
      url: "/api/agents/:id/canary",
      id: "versions.canary.set",
      tag: "versions",
      summary: "Send a share of runs to a version, sticky by routing key; {} ends the canary",
      params: idParams("agt"),
      body: CanaryRequest,
      response: Canary,
      errors: ["access.denied", "version.gate"],
      handler: ({ who, params, body }) => versions.setCanary(who, params.id, body),
    }),
  ];
}

export function approvalRoutes(approvals: Approvals): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/runs/:id/approvals",
      id: "approvals.run",
      tag: "approvals",
      summary: "The run's approvals: each tool call that asked a person, and what was decided",
      params: idParams("run"),
      response: ApprovalList,
      handler: async ({ who, params }) => ({ items: await approvals.forRun(who, params.id) }),
    }),
    route({
      method: "GET",
      url: "/api/orgs/:id/approvals",
      id: "approvals.org",
      tag: "approvals",
      summary:
        "The organisation's approvals, newest first (status=waiting: those waiting now; mine=true: those waiting for the caller's decision)",
      params: idParams("org"),
      query: ApprovalListQuery,
      response: ApprovalList,
      handler: async ({ who, params, query }) => ({
        items: await approvals.forOrg(who, params.id, query.status, query.mine === "true"),
      }),
    }),
    route({
      method: "POST",
      url: "/api/approvals/:id",
      id: "approvals.decide",
      tag: "approvals",
      summary: "Allow or deny the waiting call, naming its arguments' SHA-256",
      params: idParams("apr"),
      body: ApprovalDecision,
      response: Approval,
      errors: ["access.denied", "approval.stale"],
      handler: ({ who, params, body }) => approvals.decide(who, params.id, body),
    }),
  ];
}

export function evalRoutes(evals: Evals): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents/:id/evals",
      id: "evals.suite.save",
      tag: "evals",
      summary: "Write an evaluation suite (cases and a pass rate); one of the same name is replaced",
      params: idParams("agt"),
      body: EvalSuiteRequest,
      status: 201,
      response: EvalSuite,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => evals.saveSuite(who, params.id, body),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/evals",
      id: "evals.suite.list",
      tag: "evals",
      summary: "The agent's evaluation suites",
      params: idParams("agt"),
      response: EvalSuiteList,
      handler: async ({ who, params }) => ({ items: await evals.suites(who, params.id) }),
    }),
    route({
      method: "POST",
      url: "/api/agents/:id/versions/:n/evaluate",
      id: "evals.evaluate",
      tag: "evals",
      summary: "Evaluate a version by a suite: each case a real run of that version",
      params: VersionParams,
      body: EvaluateRequest,
      status: 202,
      response: z.object({ eval_run_id: z.string() }).meta({ id: "EvaluateStarted" }),
      errors: ["access.denied"],
      handler: ({ who, params, body }) => evals.evaluate(who, params.id, params.n, body.suite),
    }),
    route({
      method: "GET",
      url: "/api/eval-runs/:id",
      id: "evals.run.get",
      tag: "evals",
      summary: "An evaluation: its status, whether it passed, its pass rate and each case",
      params: idParams("evr"),
      response: EvalRun,
      handler: ({ who, params }) => evals.get(who, params.id),
    }),
    route({
      method: "PUT",
      url: "/api/agents/:id/eval-gate",
      id: "evals.gate",
      tag: "evals",
      summary: "Turn the agent's evaluation gate on (a suite's name) or off (null: owners only)",
      params: idParams("agt"),
      body: EvalGateRequest,
      response: EvalGate,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => evals.setGate(who, params.id, body.suite),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/eval-gate",
      id: "evals.gate.get",
      tag: "evals",
      summary: "The agent's evaluation gate and every change of it, with who made it",
      params: idParams("agt"),
      response: EvalGateHistory,
      handler: ({ who, params }) => evals.gateView(who, params.id),
    }),
  ];
}

export function evidenceRoutes(evidence: Evidence): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/orgs/:id/evidence",
      id: "evidence.make",
      tag: "evidence",
      summary: "Make an evidence pack of a period (owners, admins, auditors)",
      params: idParams("org"),
      body: EvidenceRequest,
      status: 201,
      response: EvidenceCreated,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => evidence.make(who, params.id, body),
    }),
    route({
      method: "GET",
      url: "/api/evidence/:id",
      id: "evidence.download",
      tag: "evidence",
      summary: "Download an evidence pack: gzipped JSON Lines, chained by SHA-256, closed by a manifest",
      produces: "application/gzip",
      params: idParams("evd"),
      errors: ["access.denied"],
      handler: async ({ who, params, reply }) => {
        const data = await evidence.download(who, params.id);
        return reply
          .code(200)
          .type("application/gzip")
          .header("content-disposition", `attachment; filename="${params.id}.jsonl.gz"`)
          .send(data);
      },
    }),
  ];
}

export function guardrailRoutes(guardrails: GuardrailsService): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/orgs/:id/guardrails",
      id: "guardrails.get",
      tag: "guardrails",
      summary: "The organisation's guardrails: a Cedar policy every tool decision must also pass",
      params: idParams("org"),
      response: Guardrails,
      handler: ({ who, params }) => guardrails.get(who, params.id),
    }),
    route({
      method: "PUT",
      url: "/api/orgs/:id/guardrails",
      id: "guardrails.put",
      tag: "guardrails",
      summary: "Write the organisation's guardrails (owners and admins)",
      params: idParams("org"),
      body: GuardrailsRequest,
      response: Guardrails,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => guardrails.put(who, params.id, body),
    }),
  ];
}
