// warren as an MCP server: the tools and resources both transports serve (`warren mcp` on
// stdio, `/mcp` over streamable HTTP). Every tool is a call of the TypeScript SDK against the
// API, as the caller: the same access check, the same record and the same error codes as a
// request of theirs; a refusal comes back as a tool error naming its code (`access.denied`).
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type {
  CallToolResult,
  ReadResourceResult,
  ServerNotification,
  ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { isWarrenApiError, WarrenClient, type Approval } from "../sdk/index.js";
import { followRun, type Progress } from "./follow.js";

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface McpOptions {
  /** The SDK client of the caller of this request (its identity, its seat). */
  client: (extra: Extra) => WarrenClient;
  version: string;
}

const text = (value: unknown): CallToolResult => ({
  content: [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value, null, 2) }],
});

/** A failure as the tool's answer: `code: message`, as the API said it. */
function failure(err: unknown): CallToolResult {
  const said = isWarrenApiError(err)
    ? `${err.code}: ${err.message}`
    : `error: ${err instanceof Error ? err.message : String(err)}`;
  return { isError: true, content: [{ type: "text", text: said }] };
}

/** Runs a tool's body, its failures answered as tool errors. */
const guarded =
  <A>(body: (args: A, extra: Extra) => Promise<CallToolResult>) =>
  async (args: A, extra: Extra): Promise<CallToolResult> => {
    try {
      return await body(args, extra);
    } catch (err) {
      return failure(err);
    }
  };

/** Progress notifications for this call, when the client gave a progress token. */
function progressOf(extra: Extra): Progress {
  const token = extra._meta?.progressToken;
  let n = 0;
  return async (message) => {
    if (token === undefined) return;
    n += 1;
    await extra.sendNotification({
      method: "notifications/progress",
      params: { progressToken: token, progress: n, message },
    });
  };
}

const agentArg = z.string().min(1).describe("the agent's id, or its name");
const orgArg = z
  .string()
  .min(1)
  .optional()
  .describe("the organisation (an id or a name) a name is looked up in");

/** The id of an agent given by id or name. */
async function agentId(client: WarrenClient, agent: string, org: string | undefined): Promise<string> {
  const found = await client.resolve({ kind: "agent", name: agent, ...(org ? { org_id: org } : {}) });
  return found.id;
}

/** The run's answer: its output, or why it has none. */
function runAnswer(run: { id: string; status: string; output?: string; error?: string | null }): string {
  if (run.status === "succeeded") return run.output ?? "";
  return `run ${run.id} ${run.status}${run.error ? `: ${run.error}` : ""}\n${run.output ?? ""}`.trimEnd();
}

function registerAgentTools(s: McpServer, o: McpOptions): void {
  s.registerTool(
    "agents_list",
    {
      description: "List the agents you can see (in one organisation with `org`)",
      inputSchema: { org: orgArg },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ org }, extra) => {
      const client = o.client(extra);
      const orgId = org ? (await client.resolve({ kind: "org", name: org })).id : undefined;
      const list = await client.agents.list(orgId ? { org_id: orgId } : {});
      return text(list.items.map((a) => ({ id: a.id, name: a.name, org_id: a.org_id, kind: a.kind })));
    }),
  );
  s.registerTool(
    "exec",
    {
      description: "Run a command in an agent's box as the agent and answer its exit code, stdout and stderr",
      inputSchema: {
        agent: agentArg,
        org: orgArg,
        command: z
          .union([z.string().min(1), z.array(z.string()).min(1)])
          .describe("shell text, or an argv list run without a shell"),
        cwd: z.string().optional().describe("default: the agent's home"),
        timeout_ms: z.number().int().min(1).optional(),
      },
    },
    guarded(async ({ agent, org, command, cwd, timeout_ms }, extra) => {
      const client = o.client(extra);
      const id = await agentId(client, agent, org);
      const r = await client.agent(id).exec(command, {
        ...(cwd ? { cwd } : {}),
        ...(timeout_ms ? { timeout_ms } : {}),
        signal: extra.signal,
      });
      return { ...text(r), isError: r.exit_code !== 0 };
    }),
  );
  s.registerTool(
    "files_read",
    {
      description: "Read a file of an agent's home (UTF-8 text)",
      inputSchema: { agent: agentArg, org: orgArg, path: z.string().min(1).describe("relative to the home") },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ agent, org, path }, extra) => {
      const client = o.client(extra);
      const id = await agentId(client, agent, org);
      return text(await client.agent(id).files.readText(path, { signal: extra.signal }));
    }),
  );
  s.registerTool(
    "files_write",
    {
      description: "Write a file of an agent's home (its folders are made as needed)",
      inputSchema: {
        agent: agentArg,
        org: orgArg,
        path: z.string().min(1).describe("relative to the home"),
        content: z.string().describe("the file's whole text"),
      },
    },
    guarded(async ({ agent, org, path, content }, extra) => {
      const client = o.client(extra);
      const id = await agentId(client, agent, org);
      await client.agent(id).files.write(path, content, { signal: extra.signal });
      return text(`wrote ${Buffer.byteLength(content)} bytes to ${path}`);
    }),
  );
}

function registerRunTools(s: McpServer, o: McpOptions): void {
  s.registerTool(
    "runs_start",
    {
      description:
        "Start a run of an agent (its model on `input`, or a `command` in its box) and, unless wait is false, wait for its end, telling progress (the model's text as it streams) meanwhile",
      inputSchema: {
        agent: agentArg,
        org: orgArg,
        input: z.string().optional().describe("the message to the agent (an agent run)"),
        command: z.string().optional().describe("shell text (a command run)"),
        wait: z.boolean().optional().describe("wait for the run's end (default true)"),
        timeout_s: z.number().int().min(1).optional(),
      },
    },
    guarded(async ({ agent, org, input, command, wait, timeout_s }, extra) => {
      if ((input === undefined) === (command === undefined))
        return failure(new Error("give exactly one of input (an agent run) or command (a command run)"));
      const client = o.client(extra);
      const id = await agentId(client, agent, org);
      const limit = timeout_s ? { timeout_s } : {};
      const started = await client.runs.create(
        id,
        input !== undefined
          ? { kind: "agent", input, ...limit }
          : { kind: "command", command: command ?? "", ...limit },
        { signal: extra.signal },
      );
      if (wait === false) return text({ id: started.id, status: started.status });
      const run = await followRun(client, started.id, progressOf(extra), extra.signal);
      return { ...text(runAnswer(run)), isError: run.status !== "succeeded" };
    }),
  );
  s.registerTool(
    "conversations_send",
    {
      description:
        "Send a message in a conversation with an agent (a new one when `conversation` is left out) and answer the agent's reply, streamed as progress notifications while it is written",
      inputSchema: {
        agent: agentArg.optional().describe("the agent to start a conversation with (its id or name)"),
        org: orgArg,
        conversation: z.string().optional().describe("the conversation to go on with"),
        text: z.string().min(1).describe("the message"),
      },
    },
    guarded(async ({ agent, org, conversation, text: message }, extra) => {
      const client = o.client(extra);
      let conversationId = conversation;
      if (!conversationId) {
        if (!agent) return failure(new Error("give the agent to talk with, or a conversation"));
        const id = await agentId(client, agent, org);
        conversationId = (await client.conversations.create(id, {}, { signal: extra.signal })).id;
      }
      const sent = await client.conversations.send(conversationId, message, { signal: extra.signal });
      const run = await followRun(client, sent.run_id, progressOf(extra), extra.signal);
      return {
        content: [
          { type: "text", text: runAnswer(run) },
          { type: "text", text: JSON.stringify({ conversation: conversationId, run: run.id }) },
        ],
        isError: run.status !== "succeeded",
      };
    }),
  );
}

/** The caller's approvals: of one organisation, or of every organisation they belong to. */
async function approvalsOf(
  client: WarrenClient,
  org: string | undefined,
  status: Approval["status"] | undefined,
): Promise<Approval[]> {
  const orgIds = org
    ? [(await client.resolve({ kind: "org", name: org })).id]
    : (await client.orgs.list()).items.map((x) => x.id);
  const all: Approval[] = [];
  for (const id of orgIds) all.push(...(await client.approvals.ofOrg(id, status)).items);
  return all;
}

const DECISION_SCHEMA = {
  type: "object" as const,
  properties: {
    decision: {
      type: "string" as const,
      title: "Decision",
      enum: ["allow", "deny"],
      description: "allow runs the tool call as shown; deny tells the model no",
    },
    message: { type: "string" as const, title: "Message", description: "said to the model with a denial" },
  },
  required: ["decision"],
};

/** Asks the person at the client to decide, by the protocol's elicitation; null when they did not. */
async function elicitDecision(
  s: McpServer,
  a: Approval,
  extra: Extra,
): Promise<{ decision: "allow" | "deny"; message?: string } | null> {
  const answer = await s.server.elicitInput(
    {
      mode: "form",
      message: `Run ${a.run_id} of agent ${a.agent_id} asks to call ${a.tool} with ${JSON.stringify(a.arguments)}. Allow it?`,
      requestedSchema: DECISION_SCHEMA,
    },
    { relatedRequestId: extra.requestId, signal: extra.signal },
  );
  if (answer.action !== "accept" || !answer.content) return null;
  const decision = answer.content.decision;
  if (decision !== "allow" && decision !== "deny") return null;
  const message = answer.content.message;
  return { decision, ...(typeof message === "string" && message ? { message } : {}) };
}

function registerApprovalTools(s: McpServer, o: McpOptions): void {
  s.registerTool(
    "approvals_list",
    {
      description: "List approvals of tool calls (those waiting by default) in your organisations",
      inputSchema: {
        org: orgArg,
        status: z.enum(["waiting", "allowed", "denied", "expired"]).optional(),
      },
      annotations: { readOnlyHint: true },
    },
    guarded(async ({ org, status }, extra) =>
      text(await approvalsOf(o.client(extra), org, status ?? "waiting")),
    ),
  );
  s.registerTool(
    "approvals_decide",
    {
      description:
        "Decide a waiting approval: allow or deny the tool call it holds. Without `decision`, the person at the client is asked (elicitation), when the client can ask",
      inputSchema: {
        approval: z.string().min(1).describe("the approval's id"),
        decision: z.enum(["allow", "deny"]).optional(),
        message: z.string().max(4096).optional().describe("said to the model with a denial"),
      },
    },
    guarded(async ({ approval, decision, message }, extra) => {
      const client = o.client(extra);
      const found = (await approvalsOf(client, undefined, undefined)).find((x) => x.id === approval);
      if (!found) return failure(new Error(`approval ${approval} is not one of your organisations'`));
      let chosen = decision ? { decision, ...(message ? { message } : {}) } : null;
      if (!chosen) {
        if (!s.server.getClientCapabilities()?.elicitation)
          return failure(new Error("give `decision` (allow or deny): this client cannot be asked"));
        chosen = await elicitDecision(s, found, extra);
        if (!chosen) return text(`approval ${approval} left undecided`);
      }
      const decided = await client.approvals.decide(
        approval,
        { ...chosen, args_sha256: found.args_sha256 },
        { signal: extra.signal },
      );
      return text(decided);
    }),
  );
}

/** A file's bytes as a resource: text when they are UTF-8, else base64. */
function fileContents(uri: string, bytes: Uint8Array): ReadResourceResult {
  try {
    const t = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return { contents: [{ uri, mimeType: "text/plain", text: t }] };
  } catch {
    return {
      contents: [{ uri, mimeType: "application/octet-stream", blob: Buffer.from(bytes).toString("base64") }],
    };
  }
}

const one = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? "") : (v ?? ""));

function registerResources(s: McpServer, o: McpOptions): void {
  s.registerResource(
    "agent-file",
    new ResourceTemplate("warren://agents/{agent}/files/{+path}", { list: undefined }),
    { description: "A file of an agent's home (the agent by id or name)" },
    async (uri, vars, extra) => {
      const client = o.client(extra);
      const id = await agentId(client, decodeURIComponent(one(vars.agent)), undefined);
      const bytes = await client.agent(id).files.read(one(vars.path), { signal: extra.signal });
      return fileContents(uri.href, bytes);
    },
  );
  s.registerResource(
    "run-output",
    new ResourceTemplate("warren://runs/{run}/output", { list: undefined }),
    { description: "What a run wrote (a command's output, an agent run's answer)", mimeType: "text/plain" },
    async (uri, vars, extra) => {
      const run = await o.client(extra).runs.get(one(vars.run), { signal: extra.signal });
      return { contents: [{ uri: uri.href, mimeType: "text/plain", text: run.output }] };
    },
  );
}

/**
 * The SDK client of a caller whose requests go through `fetchImpl` with `headers` (the server's
 * own /mcp hands requests to its own routes this way, as the caller).
 */
export const clientVia = (fetchImpl: typeof fetch, headers: Record<string, string>): WarrenClient =>
  new WarrenClient({ baseUrl: "http://localhost", headers, fetch: fetchImpl, retries: 0, timeoutMs: 0 });

/** A new MCP server with warren's tools and resources; connect it to one transport. */
export function createMcpServer(o: McpOptions): McpServer {
  const s = new McpServer(
    { name: "warren", version: o.version },
    {
      capabilities: { tools: {}, resources: {} },
      instructions:
        "warren runs agents in sandboxed boxes. Tools act as you, with what your seat in each organisation allows.",
    },
  );
  registerAgentTools(s, o);
  registerRunTools(s, o);
  registerApprovalTools(s, o);
  registerResources(s, o);
  return s;
}
