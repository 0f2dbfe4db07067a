// secret_request: the agent asks a person for a credential it lacks. The call waits as a call
// that needs an approval waits (src/approvals: its run is `waiting`, the conversation and the
// app show a card whose text is the agent's own); a person allowed to write secrets gives the
// value to the secrets API (POST /api/approvals/:id/secret), never to the transcript: it is
// stored as a secret granted to this agent, and reaches the run's next command as its
// variable. The tool answers with the name only. A refusal (the approval denied) and an
// expiry (nobody answered in time, or the run ended) are answers too.
import type { ApprovalDoor } from "../approvals/types.js";
import { ApprovalExpired } from "../approvals/types.js";
import { secretName } from "../contract/secrets.js";
import type { ResolvedSecrets } from "../secrets/service.js";
import type { Workload } from "../workloads/index.js";
import { str, ToolFailure, type ToolImpl } from "./impl.js";

/** How long a request waits for a person by default (WARREN_SECRET_REQUEST_WAIT_S). */
const DEFAULT_WAIT_MS = 30 * 60_000;
/** The longest description and reason a request carries (a secret's description's). */
const TEXT_MAX = 1000;

interface SecretRequestEnv {
  runId: string;
  workload: Pick<Workload, "agent" | "grantSecret">;
  /** Where the call waits (the approval door); without it the tool says it cannot wait. */
  approvals: ApprovalDoor | undefined;
  /** The agent's secrets resolved now (the value given reaches the next command). */
  resolve: (agent: { id: string; orgId: string }) => Promise<ResolvedSecrets>;
  waitMs?: number | undefined;
}

function text(args: Record<string, unknown>, name: string): string {
  const v = str(args, name).trim();
  if (v === "") throw new ToolFailure(`the argument "${name}" must not be empty`);
  if (v.length > TEXT_MAX)
    throw new ToolFailure(`the argument "${name}" is longer than ${TEXT_MAX} characters`);
  return v;
}

export function secretRequestTool(env: SecretRequestEnv): ToolImpl {
  const waitMs = env.waitMs ?? DEFAULT_WAIT_MS;
  return {
    kind: "builtin",
    tool: {
      name: "secret_request",
      description:
        "Asks a person for a secret you need (a token, a password). You wait until a person allowed to write secrets enters its value (it is never shown to you or written in the conversation), refuses, or the request expires. Once given, your next commands see it as the environment variable NAME.",
      parameters: {
        type: "object",
        properties: {
          name: {
            type: "string",
            description: "the secret's name, the environment variable it becomes: [A-Z_][A-Z0-9_]*",
          },
          description: { type: "string", description: "what the secret is (shown to the person)" },
          why: { type: "string", description: "why you need it (shown to the person)" },
        },
        required: ["name", "description", "why"],
      },
    },
    async run(args, signal, call) {
      const name = str(args, "name");
      const parsed = secretName.safeParse(name);
      if (!parsed.success)
        throw new ToolFailure(
          `the name ${JSON.stringify(name)} ${parsed.error.issues[0]?.message ?? "is invalid"}`,
        );
      const description = text(args, "description");
      const why = text(args, "why");
      const door = env.approvals;
      if (!door || !call)
        throw new ToolFailure("this run cannot wait for a person, so no secret can be asked for");
      const agent = env.workload.agent;
      // the wait ends with the run, or at its time: an expiry, said to the agent
      const timer = new AbortController();
      const t = setTimeout(
        () =>
          timer.abort(
            new ApprovalExpired(`nobody gave the secret ${name} within ${Math.round(waitMs / 1000)} s`),
          ),
        waitMs,
      );
      let answer;
      try {
        answer = await door.ask(
          {
            runId: env.runId,
            toolCallId: call.callId,
            tool: "secret_request",
            arguments: { name, description, why },
            argsSha256: call.argsSha256,
            policies: [],
            deciders: [],
          },
          AbortSignal.any([signal, timer.signal]),
          call.keep,
        );
      } finally {
        clearTimeout(t);
      }
      if (answer.decision === "deny") {
        const said = answer.message ? `: ${answer.message}` : "";
        return answer.decidedBy
          ? `the request for the secret ${name} was refused by ${answer.decidedBy}${said}`
          : `the request for the secret ${name} expired${said}`;
      }
      const resolved = await env.resolve({ id: agent.id, orgId: agent.orgId });
      const value = resolved.env[name];
      if (value === undefined)
        return `the secret ${name} was given, but it does not reach you now (its grant was changed); ask a person to grant it to you`;
      env.workload.grantSecret(name, value);
      return `the secret ${name} was given by ${answer.decidedBy ?? "a person"} and granted to you: your commands see it as the environment variable ${name} (its value is not shown here)`;
    },
  };
}
