// What every command of an agent is given by the door: who it runs as and within which walls,
// its environment, its working folder and its limits. Pure: the door (index.ts) applies them.
import path from "node:path";
import { fileAccessOf } from "../agents/policy.js";
import { policyOf, type AgentRow } from "../agents/service.js";
import type { SandboxPolicy } from "../contract/policy.js";
import { BOX_BRIDGES, BOX_PATHS, type HomeLayout, type Trust } from "../boxes/index.js";
import { WarrenError } from "../errors.js";
import { envDirOf, envVariables, homeOf, portsOf, runtimeDirOf, uidOf } from "../machines/placement.js";
import type { BoxExecRequest } from "../runtime/index.js";

export interface CommandLimits {
  memory_mib?: number | undefined;
  pids?: number | undefined;
}

/** A command's own limits in boxd's terms; nothing when none was asked. */
export function limitsOf(l: CommandLimits | undefined): { memoryMib?: number; pids?: number } | undefined {
  if (!l || (l.memory_mib === undefined && l.pids === undefined)) return undefined;
  return {
    ...(l.memory_mib !== undefined ? { memoryMib: l.memory_mib } : {}),
    ...(l.pids !== undefined ? { pids: l.pids } : {}),
  };
}

export type Walls = Pick<BoxExecRequest, "uid" | "gid" | "groups" | "files" | "bindPorts" | "network">;

/**
 * Who a command of the agent runs as and within which walls: its uid, gid and groups, the
 * files it may open (its sandbox policy; a run also reads its /agent) and the ports it
 * may listen on.
 */
export function commandWalls(
  agent: AgentRow,
  trust: Trust,
  homes: Pick<HomeLayout, "identity">,
  opts: { run?: boolean; policy?: SandboxPolicy | undefined; envRevision?: number } = {},
): Walls {
  const ports = portsOf(agent.slot);
  return {
    ...homes.identity(uidOf(agent.slot), trust),
    files: fileAccessOf(opts.policy ?? policyOf(agent), {
      home: homeOf(agent.id),
      shared: trust === "shared",
      runtime: runtimeDirOf(agent.id),
      agentDir: opts.run === true,
      // the revision's own folder: walls that name it differ from those of the revision
      // before, so a helper walled ahead of a new revision is never reused for it
      ...((opts.envRevision ?? 0) > 0 ? { env: `${envDirOf(agent.machineId)}/${opts.envRevision}` } : {}),
    }),
    bindPorts: ports,
    // Isolated: apart from the box's other agents on the network too (their homes are apart
    // by uid): TCP only to its own port block and the box's bridges, abstract unix sockets
    // only its own.
    ...(trust === "isolated" ? { network: { connect: [ports, BRIDGE_PORTS] } } : {}),
  };
}

/** The box's bridge ports as one range (they are next to each other). */
const BRIDGE_PORTS = {
  first: Math.min(...Object.values(BOX_BRIDGES)),
  last: Math.max(...Object.values(BOX_BRIDGES)),
};

export const DEFAULT_PATH = `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${BOX_PATHS.bin}`;

/** The egress proxy as commands reach it: the box's `egress` bridge. */
const PROXY_URL = `http://127.0.0.1:${BOX_BRIDGES.egress}`;
const PROXY_ENV: Record<string, string> = {};
for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]) {
  PROXY_ENV[name] = PROXY_URL;
  PROXY_ENV[name.toLowerCase()] = PROXY_URL;
}
PROXY_ENV.NO_PROXY = PROXY_ENV.no_proxy = "localhost,127.0.0.1";

/**
 * The environment every command of an agent sees; warren's own variables win over the
 * caller's. The proxy variables lead to the egress proxy, the only way out of the box.
 */
export function agentEnv(
  agent: Pick<AgentRow, "id" | "slot" | "machineId">,
  extra: Record<string, string> = {},
  envRevision = 0,
): Record<string, string> {
  const ports = portsOf(agent.slot);
  const home = homeOf(agent.id);
  const layer = envVariables(agent.machineId, envRevision);
  return {
    PATH: [...layer.path, DEFAULT_PATH].join(":"),
    ...(layer.libs.length > 0 ? { LD_LIBRARY_PATH: layer.libs.join(":") } : {}),
    LANG: "C.UTF-8",
    TMPDIR: "/tmp",
    ...extra,
    HOME: home,
    WARREN_AGENT_HOME: home,
    WARREN_AGENT_ID: agent.id,
    PORT: String(ports.first),
    WARREN_PORTS: `${ports.first}-${ports.last}`,
    ...PROXY_ENV,
    // git reads the runtime folder's configuration when there is one: the credential helper
    // of a GitHub App's installation token, for the App's git host only
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "include.path",
    GIT_CONFIG_VALUE_0: `${runtimeDirOf(agent.id)}/gitconfig`,
  };
}

/** A command's argv: given as a list, or shell text run by bash. */
export function argvOf(input: { argv?: string[] | undefined; command?: string | undefined }): string[] {
  if (input.argv && input.argv.length > 0) return input.argv;
  if (input.command !== undefined) return ["/bin/bash", "-c", input.command];
  throw new WarrenError("request.invalid", "body: give argv (a list) or command (shell text)");
}

/** The working folder: the home, or a folder given relative to it. */
export function cwdOf(agentId: string, cwd: string | undefined): string {
  const home = homeOf(agentId);
  if (cwd === undefined || cwd === "") return home;
  return path.posix.resolve(home, cwd);
}
