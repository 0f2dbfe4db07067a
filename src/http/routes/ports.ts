// /api/agents/:id/ports/:port/* sends the viewer to the port's preview, on an origin of its own
// (src/preview): a 307 to that address with a one-time token, and nothing of the box itself.
import { z } from "zod";
import type { Identity } from "../../access/index.js";
import type { Agents } from "../../agents/service.js";
import { WarrenError } from "../../errors.js";
import { portsOf } from "../../machines/placement.js";
import { PREVIEW_TOKEN_PARAM, type PreviewGrants } from "../../preview/index.js";
import { route, type AnyRoute } from "../route.js";
import { ErrorEnvelope, idOf } from "../../contract/common.js";
import type { HTTPMethods } from "fastify";

const params = z.object({
  id: idOf("agt"),
  port: z.coerce.number().int().min(1).max(65535),
  "*": z.string().max(8192),
});

export interface PreviewLinks {
  grants: PreviewGrants;
  /** The origin of an agent's port's preview, or null while the previews' listener is not started. */
  origin(agentId: string, port: number): string | null;
  /**
   * Throws area.refused for a member who holds areas: a port serves the whole box, which no
   * area fences, so such a member gets no preview token (the previews' listener refuses them too).
   */
  unfenced(orgId: string, who: Identity): Promise<void>;
  /** The caller's access revision in the organisation, which the preview's session is bound to. */
  revision(orgId: string, who: Identity): Promise<number>;
}

const others: HTTPMethods[] = ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

export function portRoutes(agents: Agents, previews: PreviewLinks): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/agents/:id/ports/:port/*",
      id: "ports.get",
      tag: "ports",
      summary:
        "307 to the port's preview, on its own origin, with a one-time token (warren_preview) good for a minute; the agent's own port block only",
      params,
      status: 307,
      produces: "text/plain",
      errors: ["port.unreachable", "area.refused"],
      handler: async ({ who, params: p, req, reply }) => {
        const agent = await agents.load(who, p.id, "inspect");
        await previews.unfenced(agent.orgId, who);
        const block = portsOf(agent.slot);
        if (p.port < block.first || p.port > block.last) {
          throw new WarrenError(
            "request.invalid",
            `path.port: ${p.port} is outside the agent's port block ${block.first}-${block.last}`,
          );
        }
        const origin = previews.origin(agent.id, p.port);
        if (!origin) throw new WarrenError("port.unreachable", "the previews' listener is not started");
        const q = req.url.indexOf("?");
        const target = new URL(`/${p["*"]}${q >= 0 ? req.url.slice(q) : ""}`, origin);
        target.searchParams.delete(PREVIEW_TOKEN_PARAM);
        target.searchParams.set(
          PREVIEW_TOKEN_PARAM,
          previews.grants.issue(who, agent.id, p.port, await previews.revision(agent.orgId, who)),
        );
        return reply
          .code(307)
          .header("location", target.toString())
          .header("cache-control", "no-store")
          .header("referrer-policy", "no-referrer")
          .type("text/plain; charset=utf-8")
          .send("the port is served on its preview's origin: follow the Location header\n");
      },
    }),
    ...others.map((method) =>
      route({
        method,
        url: "/api/agents/:id/ports/:port/*",
        id: `ports.${method.toLowerCase()}`,
        tag: "ports",
        summary: "405: a port is reached on its preview's origin (GET this route to be sent there)",
        params,
        status: 405,
        response: ErrorEnvelope,
        rawBody: true,
        errors: ["method.not_allowed"],
        handler: async () => {
          throw new WarrenError(
            "method.not_allowed",
            "the box's port is not served on the API: GET this address to be sent to its preview, and send the request there",
          );
        },
      }),
    ),
  ];
}
