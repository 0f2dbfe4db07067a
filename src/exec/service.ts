// Commands in the box: an agent's exec runs as the agent, in its home, with its environment.
import path from "node:path";
import type { Identity } from "../access/index.js";
import { fileAccessOf } from "../agents/policy.js";
import { policyOf, type AgentRow, type Agents } from "../agents/service.js";
import { BOX_BRIDGES, BOX_PATHS, type HomeLayout, type Trust } from "../boxes/index.js";
import { homeOf, portsOf, uidOf } from "../machines/placement.js";
import type { BoxExecRequest, BoxExecResult, ExecIo, MachineRuntime } from "../runtime/index.js";
import type { Metrics } from "../observability/metrics.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { eq } from "drizzle-orm";
import { WarrenError } from "../errors.js";
import { SECRET_VALUE_MIN_BYTES } from "../contract/secrets.js";
import { Redactor, type RedactStream } from "../secrets/redact.js";
import type { ResolvedSecrets, Secrets } from "../secrets/service.js";

export interface ExecInput {
  argv?: string[] | undefined;
  command?: string | undefined;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  stdin?: string | undefined;
  timeout_ms?: number | undefined;
  /** The command's own limits, tighter than its machine's. */
  limits?: CommandLimits | undefined;
}

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

/**
 * Who a command of the agent runs as and within which walls: its uid, gid and groups, the
 * files it may open (its sandbox policy; a run also reads its /agent) and the ports it
 * may listen on. Exec and runs both start commands through this.
 */
export function commandWalls(
  agent: AgentRow,
  trust: Trust,
  homes: Pick<HomeLayout, "identity">,
  opts: { run?: boolean } = {},
): Pick<BoxExecRequest, "uid" | "gid" | "groups" | "files" | "bindPorts" | "network"> {
  const ports = portsOf(agent.slot);
  return {
    ...homes.identity(uidOf(agent.slot), trust),
    files: fileAccessOf(policyOf(agent), {
      home: homeOf(agent.id),
      shared: trust === "shared",
      agentDir: opts.run === true,
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
  agent: Pick<AgentRow, "id" | "slot">,
  extra: Record<string, string> = {},
): Record<string, string> {
  const ports = portsOf(agent.slot);
  const home = homeOf(agent.id);
  return {
    PATH: DEFAULT_PATH,
    LANG: "C.UTF-8",
    TMPDIR: "/tmp",
    ...extra,
    HOME: home,
    WARREN_AGENT_HOME: home,
    WARREN_AGENT_ID: agent.id,
    PORT: String(ports.first),
    WARREN_PORTS: `${ports.first}-${ports.last}`,
    ...PROXY_ENV,
  };
}

export function argvOf(input: Pick<ExecInput, "argv" | "command">): string[] {
  if (input.argv && input.argv.length > 0) return input.argv;
  if (input.command !== undefined) return ["/bin/bash", "-c", input.command];
  throw new WarrenError("request.invalid", "body: give argv (a list) or command (shell text)");
}

export function cwdOf(agentId: string, cwd: string | undefined): string {
  const home = homeOf(agentId);
  if (cwd === undefined || cwd === "") return home;
  return path.posix.resolve(home, cwd);
}

/**
 * The same io with every secret that reached the command redacted from stdout and stderr
 * (each a stream of its own, so a value split across chunks is caught); `flush` lets out
 * what was held back once the command ended. A value the agent stores while the command
 * runs (warren-secret store) joins the redaction from then on: `follow` adds a stage
 * after the ones already there, until flush.
 */
export function redactedIo<T extends ExecIo>(
  io: T,
  secrets: Pick<ResolvedSecrets, "redactor" | "follow">,
): T & { flush(): void } {
  const out: RedactStream[] = [];
  const err: RedactStream[] = [];
  const add = (r: Redactor) => {
    if (r.size === 0) return;
    out.push(r.stream());
    err.push(r.stream());
  };
  add(secrets.redactor);
  const stop = secrets.follow?.((value) => add(new Redactor([value], SECRET_VALUE_MIN_BYTES)));
  if (out.length === 0 && !stop) return { ...io, flush: () => {} };
  const through = (stages: RedactStream[], b: Buffer) => {
    for (const s of stages) b = s.push(b);
    return b;
  };
  const finish = (stages: RedactStream[]) => {
    let b: Buffer = Buffer.alloc(0);
    for (const s of stages) {
      const a = s.push(b);
      const z = s.end();
      b = z.length === 0 ? a : Buffer.concat([a, z]);
    }
    return b;
  };
  const give = (to: ((c: Buffer) => void) | undefined, b: Buffer) => {
    if (b.length > 0) to?.(b);
  };
  return {
    ...io,
    onStdout: (c: Buffer) => give(io.onStdout, through(out, c)),
    onStderr: (c: Buffer) => give(io.onStderr, through(err, c)),
    flush: () => {
      stop?.();
      give(io.onStdout, finish(out));
      give(io.onStderr, finish(err));
    },
  };
}

export class Exec {
  constructor(
    private readonly db: Db,
    private readonly agents: Agents,
    private readonly runtime: MachineRuntime,
    private readonly homes: HomeLayout,
    private readonly metrics: Metrics,
    private readonly secrets: Secrets,
  ) {}

  /**
   * Checks access, resolves the agent and starts its box; the returned function runs the
   * command. Streaming answers call it after their headers, so every refusal comes first.
   */
  async prepare(
    who: Identity,
    agentId: string,
    input: ExecInput,
  ): Promise<(io: ExecIo) => Promise<BoxExecResult>> {
    const agent = await this.agents.load(who, agentId, "write");
    const [machine] = await this.db
      .select({ trust: schema.machines.trust })
      .from(schema.machines)
      .where(eq(schema.machines.id, agent.machineId));
    if (!machine) throw new WarrenError("not_found", "machine was not found");
    const argv = argvOf(input);
    await this.runtime.ensure(agent.machineId);
    const walls = commandWalls(agent, machine.trust, this.homes);
    // resolved for each exec: a grant or a value changed reaches the next command
    const secrets = await this.secrets.resolve(agent);
    return async (plainIo) => {
      const io = redactedIo(plainIo, secrets);
      let result: BoxExecResult;
      try {
        result = await this.runtime.exec(
          agent.machineId,
          {
            argv,
            env: agentEnv(agent, { ...input.env, ...secrets.env }),
            cwd: cwdOf(agent.id, input.cwd),
            ...walls,
            stdin: input.stdin !== undefined ? Buffer.from(input.stdin, "utf8") : undefined,
            timeoutMs: input.timeout_ms ?? 60_000,
            limits: limitsOf(input.limits),
          },
          io,
          { agentId: agent.id, argv },
        );
      } finally {
        io.flush();
      }
      this.metrics.execs.inc({
        outcome: result.timedOut ? "timed_out" : result.cancelled ? "cancelled" : "exited",
      });
      return result;
    };
  }
}
