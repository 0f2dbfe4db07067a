// An MCP server's tools over Streamable HTTP: connected and listed at the run's start, each
// named `<server>__<tool>` for the model, each call decided by the policy before it is sent.
// Header values come from the agent's granted secrets of use tool, read in the server only,
// and are redacted from every answer. Every request goes through the guarded connector (the
// address rule's).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ToolSpec } from "../contract/spec.js";
import type { GuardedFetch } from "../net/connector.js";
import { Redactor } from "../secrets/redact.js";
import type { ResolvedSecrets, ToolHeaderValues } from "../secrets/service.js";
import { bounded, ToolFailure, type ToolImpl } from "./impl.js";
import type { ToolParameters } from "./types.js";

type McpSpec = Extract<ToolSpec, { type: "mcp" }>;

const MCP_CONNECT_MS = 15_000;
const MCP_CALL_MS = 120_000;
/** The most tools taken from one server. */
const MCP_MAX_TOOLS = 64;

export interface McpConnection {
  tools: ToolImpl[];
  close(): Promise<void>;
}

/** One content part of a tool's answer, as text for the model. */
function partText(part: Record<string, unknown>): string {
  switch (part.type) {
    case "text":
      return String(part.text);
    case "image":
    case "audio":
      return `[${String(part.type)}: ${String(part.mimeType)}, ${String(part.data).length} base64 characters not shown]`;
    case "resource": {
      const r = part.resource as Record<string, unknown> | undefined;
      return typeof r?.text === "string" ? r.text : `[resource ${String(r?.uri)}]`;
    }
    case "resource_link":
      return `[resource ${String(part.uri)}]`;
    default:
      return JSON.stringify(part);
  }
}

/**
 * The name the model calls a server's tool by: `<server>__<tool>`, with what providers refuse
 * in a tool name (anything but letters, digits, `_` and `-`) made `_`, at most 64 characters,
 * and a number added when two tools would share a name.
 */
export function modelName(server: string, tool: string, taken: Set<string>): string {
  const base = `${server}__${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`.slice(0, 64);
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base.slice(0, 64 - String(i).length - 1)}_${i}`;
  taken.add(name);
  return name;
}

/** Connects to the server and lists its tools; a server that cannot be reached fails the open. */
export async function connectMcp(
  spec: McpSpec,
  values: ToolHeaderValues,
  secrets: { redactor: Pick<ResolvedSecrets["redactor"], "redactText"> },
  signal: AbortSignal,
  guarded: GuardedFetch,
): Promise<McpConnection> {
  const headers: Record<string, string> = {};
  for (const [header, secret] of Object.entries(spec.headers ?? {})) {
    const value = values[secret]?.value;
    if (value === undefined)
      throw new ToolFailure(
        `MCP server ${spec.name}: the secret ${secret} is not granted to this agent (as a secret of use tool)`,
      );
    headers[header] = value;
  }
  const redactor = new Redactor(Object.values(headers));
  const hide = (t: string) => secrets.redactor.redactText(redactor.redactText(t));
  const client = new Client({ name: "warren", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), {
    requestInit: { headers },
    fetch: guarded,
  });
  try {
    await client.connect(transport, { signal, timeout: MCP_CONNECT_MS });
    const listed = await client.listTools(undefined, { signal, timeout: MCP_CONNECT_MS });
    const taken = new Set<string>();
    const tools = listed.tools.slice(0, MCP_MAX_TOOLS).map((t): ToolImpl => {
      const name = modelName(spec.name, t.name, taken);
      const { type: _type, ...rest } = t.inputSchema;
      const parameters: ToolParameters = { type: "object", ...rest };
      return {
        kind: "mcp",
        server: spec.name,
        tool: {
          name,
          description: hide(t.description ?? `${t.name} of the MCP server ${spec.name}`),
          parameters,
        },
        async run(args, callSignal) {
          const answer = await client.callTool({ name: t.name, arguments: args }, undefined, {
            signal: callSignal,
            timeout: MCP_CALL_MS,
          });
          const parts = Array.isArray(answer.content) ? (answer.content as Record<string, unknown>[]) : [];
          let text = parts.map(partText).join("\n");
          if (parts.length === 0 && answer.structuredContent !== undefined)
            text = JSON.stringify(answer.structuredContent);
          if (answer.isError === true) throw new ToolFailure(hide(text || "the tool answered an error"));
          return bounded(hide(text));
        },
      };
    });
    return { tools, close: () => client.close() };
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
}
