import { eq } from "drizzle-orm";
import { z } from "zod";
import type { Agents } from "../../agents/service.js";
import { WarrenError } from "../../errors.js";
import { effectiveCap } from "../../homes/caps.js";
import { parseHomePath, readHomeFile, writeHomeFile } from "../../homes/index.js";
import type { HomeLayout } from "../../machines/ports.js";
import { SHARED_GID } from "../../boxes/index.js";
import { uidOf } from "../../machines/placement.js";
import type { Db } from "../../store/index.js";
import { schema } from "../../store/index.js";
import { route, type AnyRoute } from "../route.js";
import { idOf, idParams } from "../../contract/common.js";
import { Usage } from "../../contract/homes.js";

/** The most the file routes read or write in one request. */
export const FILE_LIMIT_BYTES = 32 * 1024 * 1024;

const fileParams = z.object({ id: idOf("agt"), "*": z.string().max(4096) });

/** The wildcard part of a files URL, as the router decoded it (once). */
const pathOf = (raw: string): string => raw;

export function homeRoutes(db: Db, agents: Agents, layout: HomeLayout, hostMaxMib: number): AnyRoute[] {
  const machineOf = async (id: string) => {
    const [m] = await db.select().from(schema.machines).where(eq(schema.machines.id, id));
    if (!m) throw new WarrenError("not_found", "machine was not found");
    return m;
  };
  return [
    route({
      method: "GET",
      url: "/api/agents/:id/usage",
      id: "homes.usage",
      tag: "homes",
      summary: "The disk the agent's home and its machine's folder use, against their caps, as last measured",
      params: idParams("agt"),
      response: Usage,
      handler: async ({ who, params }) => {
        const a = await agents.load(who, params.id, "read");
        const m = await machineOf(a.machineId);
        return {
          workspace_mib: a.workspaceMib,
          max_workspace_mib: effectiveCap(a.maxWorkspaceMib, hostMaxMib),
          machine: {
            id: m.id,
            name: m.name,
            workspace_mib: m.workspaceMib,
            max_workspace_mib: m.maxWorkspaceMib,
          },
        };
      },
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/files/*",
      id: "files.read",
      tag: "homes",
      summary: "Read a file of the agent's home, by the host-side read rules",
      produces: "application/octet-stream",
      params: fileParams,
      errors: ["file.invalid_path", "file.link", "file.not_regular", "file.not_found", "file.too_large"],
      handler: async ({ who, params, reply }) => {
        const a = await agents.load(who, params.id, "inspect");
        const components = parseHomePath(a.id, pathOf(params["*"]));
        const data = await readHomeFile(layout.homeDir(a.machineId, a.id), components, {
          maxBytes: FILE_LIMIT_BYTES,
        });
        return reply.code(200).type("application/octet-stream").send(data);
      },
    }),
    route({
      method: "PUT",
      url: "/api/agents/:id/files/*",
      id: "files.write",
      tag: "homes",
      summary: "Create or replace a file of the agent's home, by the host-side write rules",
      params: fileParams,
      rawBody: true,
      bodyLimit: FILE_LIMIT_BYTES,
      status: 204,
      errors: ["file.invalid_path", "file.link", "file.not_regular", "file.too_large", "access.denied"],
      handler: async ({ who, params, body }) => {
        const a = await agents.load(who, params.id, "write");
        const m = await machineOf(a.machineId);
        const components = parseHomePath(a.id, pathOf(params["*"]));
        const uid = uidOf(a.slot);
        await writeHomeFile(layout.homeDir(a.machineId, a.id), components, body as Buffer, {
          maxBytes: FILE_LIMIT_BYTES,
          uid,
          gid: m.trust === "shared" ? SHARED_GID : uid,
          mode: m.trust === "shared" ? 0o640 : 0o600,
        });
      },
    }),
  ];
}
