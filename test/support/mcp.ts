// A small MCP server on loopback (Streamable HTTP, stateless) for tests: `echo` answers its
// text, `add` adds two numbers, `fail` answers an error. It remembers the calls it got and the
// headers they came with.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

export interface TestMcpServer {
  url: string;
  calls: { tool: string; args: unknown }[];
  headers: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

function build(calls: TestMcpServer["calls"]): McpServer {
  const s = new McpServer({ name: "test-mcp", version: "1.0.0" });
  s.registerTool(
    "echo",
    { description: "Answers the text it is given", inputSchema: { text: z.string() } },
    ({ text }) => {
      calls.push({ tool: "echo", args: { text } });
      return { content: [{ type: "text", text: `echo: ${text}` }] };
    },
  );
  s.registerTool(
    "add",
    { description: "Adds two numbers", inputSchema: { a: z.number(), b: z.number() } },
    ({ a, b }) => {
      calls.push({ tool: "add", args: { a, b } });
      return { content: [{ type: "text", text: String(a + b) }] };
    },
  );
  s.registerTool("fail", { description: "Always fails" }, () => {
    calls.push({ tool: "fail", args: {} });
    return { content: [{ type: "text", text: "it went wrong" }], isError: true };
  });
  return s;
}

export async function startMcpServer(): Promise<TestMcpServer> {
  const calls: TestMcpServer["calls"] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const srv = http.createServer((req, res) => {
    headers.push(req.headers);
    const server = build(calls);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    headers,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}
