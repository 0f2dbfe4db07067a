// Commands in the box: an agent's exec runs as the agent, in its home, with its environment,
// through the agent's door (src/workloads).
import type { Identity } from "../access/index.js";
import { COMMAND_LIMITS } from "../contract/lists.js";
import type { Agents } from "../agents/service.js";
import type { Metrics } from "../observability/metrics.js";
import type { BoxExecResult, ExecIo } from "../runtime/index.js";
import { argvOf, type CommandLimits, type Workloads } from "../workloads/index.js";

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

export class Exec {
  constructor(
    private readonly agents: Pick<Agents, "load">,
    private readonly workloads: Workloads,
    private readonly metrics: Metrics,
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
    const argv = argvOf(input);
    // opened for each exec: a grant or a value changed reaches the next command
    const work = await this.workloads.open(agent);
    await work.ready();
    return async (io) => {
      const result = await work
        .exec(
          {
            argv,
            env: input.env,
            cwd: input.cwd,
            stdin: input.stdin !== undefined ? Buffer.from(input.stdin, "utf8") : undefined,
            timeoutMs: input.timeout_ms ?? COMMAND_LIMITS.execTimeoutMsDefault,
            limits: input.limits,
          },
          io,
        )
        // the unit of work ends with its command (a memory: false workspace goes)
        .finally(() => work.release());
      this.metrics.execs.inc({
        outcome: result.timedOut ? "timed_out" : result.cancelled ? "cancelled" : "exited",
      });
      return result;
    };
  }
}
