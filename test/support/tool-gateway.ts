// The tool gateway as a harness CLI reaches it, for tests: a run's session of the model
// gateway (its workload token the run's only key) and the gateway's MCP endpoint mounted in
// Fastify on loopback, as a harness engineer would mount it (hijack, then the parsed body).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import Fastify from "fastify";
import { AgentSpec } from "../../src/contract/spec.js";
import { Gateway } from "../../src/models/gateway.js";
import { Prices } from "../../src/models/prices.js";
import type { GatewaySession } from "../../src/models/types.js";
import { createToolGateway, type ToolGatewayOptions } from "../../src/tools/gateway.js";
import { boundConnector } from "./bound.js";

interface MountedToolGateway {
  /** The run's session (its token is the bearer the endpoint takes). */
  session: GatewaySession;
  /** The endpoint's address. */
  url: URL;
  /** An MCP client connected with this bearer token (none: null). */
  connect(token: string | null): Promise<Client>;
  /** Stops the endpoint and closes the session. */
  close(): Promise<void>;
}

/** Opens a codex run's session for the agent and mounts the run's tools over MCP at `path`. */
export async function mountToolGateway(
  toolsets: ToolGatewayOptions["toolsets"],
  o: { runId: string; agent: { id: string; orgId: string; machineId: string }; path?: string },
): Promise<MountedToolGateway> {
  const models = new Gateway({
    keysOf: async () => ({}),
    readHome: async () => Buffer.alloc(0),
    prices: new Prices(),
    fetch: boundConnector(),
  });
  const session = await models.open({
    runId: o.runId,
    agent: o.agent,
    spec: AgentSpec.parse({
      kind: "codex",
      model: { provider: "openai-compatible", name: "m", base_url: "http://127.0.0.1:9/v1" },
    }),
    input: "",
    events: async () => {},
  });
  const handle = createToolGateway({ sessions: models, toolsets });
  const path = o.path ?? "/mcp";
  const app = Fastify();
  app.all(path, async (req, reply) => {
    reply.hijack();
    await handle(req.raw, reply.raw, req.body);
  });
  const url = new URL(path, await app.listen({ host: "127.0.0.1", port: 0 }));
  return {
    session,
    url,
    connect: async (token) => {
      const client = new Client({ name: "harness", version: "1" });
      const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
      return client;
    },
    close: async () => {
      await app.close();
      session.close();
    },
  };
}
