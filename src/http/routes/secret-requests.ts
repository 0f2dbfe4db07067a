import { idParams } from "../../contract/common.js";
import { SecretRequestAnswer } from "../../contract/secrets.js";
import { Approval } from "../../contract/versions.js";
import type { Approvals } from "../../approvals/service.js";
import type { Secrets } from "../../secrets/service.js";
import { route, type AnyRoute } from "../route.js";

/** An agent's secret_request answered with its value: a secret granted to that agent, never in the transcript. */
export function secretRequestRoutes(approvals: Approvals, secrets: Pick<Secrets, "create">): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/approvals/:id/secret",
      id: "approvals.secret",
      tag: "approvals",
      summary:
        "Answer an agent's waiting secret_request with the value: stored as a secret of the organisation granted to that agent (the caller must be allowed to write secrets); the agent is told the name only",
      params: idParams("apr"),
      body: SecretRequestAnswer,
      response: Approval,
      errors: ["access.denied", "approval.stale"],
      handler: ({ who, params, body }) =>
        approvals.provide(who, params.id, body.args_sha256, async (req) => {
          await secrets.create(who, {
            org_id: req.orgId,
            name: req.name,
            description: req.description,
            value: body.value,
            use: "env",
            grants: [{ scope: "agent", id: req.agentId }],
          });
        }),
    }),
  ];
}
