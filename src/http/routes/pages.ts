// The pages the server serves itself, all in this one place (the operator app takes these
// routes over when it exists): the agent's terminal page, its browser modules, and
// xterm.js's own files from node_modules.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { idParams } from "../../contract/common.js";
import { WarrenError } from "../../errors.js";
import { route, type AnyRoute } from "../route.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
/** The terminal page's files (src/terminal/page; the same folder serves a built checkout). */
const pageDir = path.join(root, "src", "terminal", "page");
const require = createRequire(import.meta.url);

const types: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** The files served under /assets, by their names there (nothing else is reachable). */
function assets(): { terminal: Record<string, string>; xterm: Record<string, string> } {
  const xterm = path.dirname(require.resolve("@xterm/xterm/package.json"));
  const fit = path.dirname(require.resolve("@xterm/addon-fit/package.json"));
  return {
    terminal: {
      "client.js": path.join(pageDir, "client.js"),
      "page.js": path.join(pageDir, "page.js"),
    },
    xterm: {
      "xterm.mjs": path.join(xterm, "lib", "xterm.mjs"),
      "xterm.css": path.join(xterm, "css", "xterm.css"),
      "addon-fit.mjs": path.join(fit, "lib", "addon-fit.mjs"),
    },
  };
}

const fileParams = z.object({ file: z.string().max(100) });

export function pageRoutes(): AnyRoute[] {
  const files = assets();
  const send = (folder: Record<string, string>, name: string) => {
    const file = Object.hasOwn(folder, name) ? folder[name] : undefined;
    if (!file) throw new WarrenError("not_found", `no asset ${name}`);
    return file;
  };
  return [
    route({
      method: "GET",
      url: "/agents/:id/terminal",
      id: "pages.terminal",
      tag: "pages",
      summary: "The agent's terminal, a page (xterm.js) attached to /api/agents/:id/cli/tty",
      public: true,
      params: idParams("agt"),
      produces: "text/html",
      handler: async ({ reply }) =>
        reply
          .type(types[".html"] as string)
          .header("cache-control", "no-store")
          .send(await readFile(path.join(pageDir, "index.html"))),
    }),
    route({
      method: "GET",
      url: "/assets/terminal/:file",
      id: "pages.assets.terminal",
      tag: "pages",
      summary:
        "The terminal page's browser modules (client.js: an xterm.js Terminal on the terminal's WebSocket)",
      public: true,
      params: fileParams,
      produces: "text/javascript",
      handler: async ({ params, reply }) => {
        const file = send(files.terminal, params.file);
        return reply
          .type(types[path.extname(file)] as string)
          .header("cache-control", "no-cache")
          .send(await readFile(file));
      },
    }),
    route({
      method: "GET",
      url: "/assets/xterm/:file",
      id: "pages.assets.xterm",
      tag: "pages",
      summary: "xterm.js's own files (xterm.mjs, xterm.css, addon-fit.mjs)",
      public: true,
      params: fileParams,
      produces: "text/javascript",
      handler: async ({ params, reply }) => {
        const file = send(files.xterm, params.file);
        return reply
          .type(types[path.extname(file)] as string)
          .header("cache-control", "max-age=3600")
          .send(await readFile(file));
      },
    }),
  ];
}
