// `warren mcp`: warren as an MCP server on stdio, for desktop clients and IDEs. Its tools call
// the server at --url through the SDK with the CLI's own identity (--header, $WARREN_HEADERS),
// as every other command does; it serves until the client closes stdin.
import { once } from "node:events";
import type { Readable, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createMcpServer } from "../../mcp/server.js";
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_OK } from "../context.js";
import { packageVersion } from "../run.js";

export const mcp = defineSingle(
  "mcp",
  "serve warren's tools to an MCP client on stdio",
  defineCommand({
    summary:
      "speak the Model Context Protocol on stdin/stdout (for an MCP client to start): tools to list agents, exec in a box, read and write home files, start and follow runs, talk in conversations and decide approvals, as you, against the server at --url; resources warren://agents/{agent}/files/{path} and warren://runs/{run}/output",
    parse: () => ({}),
    run: async (ctx) => {
      const stdin = ctx.io.stdin as Readable;
      const transport = new StdioServerTransport(stdin, ctx.io.stdout as Writable);
      const server = createMcpServer({ version: await packageVersion(), client: () => ctx.client });
      const ended = Promise.race([once(stdin, "end"), once(stdin, "close")]);
      await server.connect(transport);
      await ended;
      await server.close();
      return EXIT_OK;
    },
  }),
);
