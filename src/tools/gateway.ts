// The tool gateway: an MCP server (Streamable HTTP, stateless, JSON answers) through which a
// harness CLI in the box calls its run's tools. It knows the run by the workload token of the
// run's model gateway session (`Authorization: Bearer <token>`); the calls go to the run's
// open toolset, so each is decided by the agent's Cedar policy and recorded like the loop's.
import type { IncomingMessage, ServerResponse } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { ErrorCode } from "../contract/errors.js";
import type { ModelGateway } from "../models/types.js";
import type { Toolset } from "./types.js";

export interface ToolGatewayOptions {
  /** Finds the run's session by its workload token. */
  sessions: Pick<ModelGateway, "byToken">;
  /** Finds the run's open toolset (Tools.forRun). */
  toolsets: { forRun(runId: string): Toolset | undefined };
}

/**
 * Handles one HTTP request to the tool gateway: POST (JSON-RPC messages), GET and DELETE as
 * the Streamable HTTP transport defines them. `body` is the JSON body when a framework has
 * already parsed it (Fastify: `reply.hijack()` then `handle(request.raw, reply.raw, request.body)`);
 * left out, the body is read from `req`. A missing or unknown token answers 401 auth.required,
 * a run without open tools 404 not_found, in warren's error shape.
 */
export type ToolGatewayHandler = (req: IncomingMessage, res: ServerResponse, body?: unknown) => Promise<void>;

function refuse(res: ServerResponse, status: number, code: ErrorCode, message: string): void {
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    ...(status === 401 ? { "www-authenticate": 'Bearer realm="warren tool gateway"' } : {}),
  });
  res.end(JSON.stringify({ error: { code, message } }));
}

function tokenOf(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (typeof h !== "string") return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1] ?? null;
}

/** The MCP server of one toolset, answering one request. */
function serverFor(toolset: Toolset): Server {
  const server = new Server({ name: "warren-tools", version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: toolset.tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.parameters,
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const outcome = await toolset.call(req.params.name, req.params.arguments ?? {});
    return {
      content: [{ type: "text" as const, text: outcome.output }],
      isError: outcome.record.decision === "deny" || outcome.record.error !== undefined,
    };
  });
  return server;
}

export function createToolGateway(o: ToolGatewayOptions): ToolGatewayHandler {
  return async (req, res, body) => {
    const token = tokenOf(req);
    if (token === null)
      return refuse(
        res,
        401,
        "auth.required",
        "the tool gateway needs the run's workload token as a Bearer token",
      );
    const session = o.sessions.byToken(token);
    if (session === null)
      return refuse(res, 401, "auth.required", "the workload token is unknown, expired or its run has ended");
    const toolset = o.toolsets.forRun(session.runId);
    if (!toolset) return refuse(res, 404, "not_found", "this run has no tools open");

    const server = serverFor(toolset);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };
}
