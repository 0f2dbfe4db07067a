// /api/agents/:id/ports/:port/* proxies HTTP to a port inside the agent's box, through boxd,
// only within the agent's own port block.
import http from "node:http";
import type { HTTPMethods } from "fastify";
import { z } from "zod";
import type { Agents } from "../../agents/service.js";
import { WarrenError } from "../../errors.js";
import { portsOf } from "../../machines/placement.js";
import type { MachineRuntime } from "../../runtime/index.js";
import { route, type AnyRoute } from "../route.js";
import { idOf } from "../../contract/common.js";

const hopByHop = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
]);

export function filterHeaders(h: http.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || hopByHop.has(k.toLowerCase())) continue;
    out[k] = v;
  }
  return out;
}

const params = z.object({
  id: idOf("agt"),
  port: z.coerce.number().int().min(1).max(65535),
  "*": z.string().max(8192),
});
const methods: HTTPMethods[] = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

export function portRoutes(agents: Agents, runtime: MachineRuntime): AnyRoute[] {
  return methods.map((method) =>
    route({
      method,
      url: "/api/agents/:id/ports/:port/*",
      id: `ports.${method.toLowerCase()}`,
      tag: "ports",
      summary: "Proxy HTTP to a port in the agent's box (its own port block only)",
      params,
      rawBody: true,
      produces: "*/*",
      bodyLimit: 64 * 1024 * 1024,
      errors: ["box.unavailable", "port.unreachable"],
      handler: async ({ who, params: p, req, reply, body }) => {
        const agent = await agents.load(
          who,
          p.id,
          method === "GET" || method === "HEAD" ? "inspect" : "write",
        );
        const block = portsOf(agent.slot);
        if (p.port < block.first || p.port > block.last) {
          throw new WarrenError(
            "request.invalid",
            `path.port: ${p.port} is outside the agent's port block ${block.first}-${block.last}`,
          );
        }
        const conn = await runtime.forward(agent.machineId, p.port);
        const q = req.url.indexOf("?");
        const target = `/${p["*"]}${q >= 0 ? req.url.slice(q) : ""}`;
        const upstream = await new Promise<http.IncomingMessage>((resolve, reject) => {
          const r = http.request({
            method,
            path: target,
            headers: { ...filterHeaders(req.headers), host: `127.0.0.1:${p.port}` },
            // no agent: this one connection, made by boxd inside the box
            createConnection: () => conn.resume(),
          });
          r.on("response", resolve);
          r.on("error", (err) =>
            reject(
              new WarrenError(
                "port.unreachable",
                `nothing answered on port ${p.port} in the box: ${err.message}`,
              ),
            ),
          );
          const buf = body as Buffer;
          r.end(buf.length > 0 ? buf : undefined);
        });
        reply.code(upstream.statusCode ?? 502);
        for (const [k, v] of Object.entries(filterHeaders(upstream.headers))) reply.header(k, v);
        return reply.send(upstream);
      },
    }),
  );
}
