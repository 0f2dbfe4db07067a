// The image kind: an agent whose runs start its machine's own image's entrypoint. The run's
// input is staged at /agent/input, the entrypoint (the image's Entrypoint then Cmd, as an
// engine would run them) runs in the machine's box as the agent, like every run's main
// command: the same limits, egress, secrets and record; what it prints on stdout is the
// run's output, its stderr goes to the trace. The image is the box's (a machine names it on
// oci or kubernetes); a machine without one, as every local machine, is refused by name.
import { execFile } from "node:child_process";
import { eq } from "drizzle-orm";
import { WarrenError } from "../errors.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { GATEWAY_IN_BOX, runMainCommand, TOKEN_VAR } from "./harness.js";
import type { AgentRunContext, AgentRunner, AgentRunResult } from "./kinds.js";

/** An image's configured command: its Entrypoint, then its Cmd. */
interface ImageCommand {
  entrypoint: string[];
  cmd: string[];
}

/** The command an engine starts for the image (Entrypoint then Cmd); refused when it has none. */
function imageArgv(image: string, c: ImageCommand): string[] {
  const argv = [...c.entrypoint, ...c.cmd];
  if (argv.length === 0)
    throw new WarrenError(
      "request.invalid",
      `the image ${image} has neither an Entrypoint nor a Cmd: an image-kind agent runs the image's entrypoint`,
    );
  return argv;
}

/** The image's Entrypoint and Cmd as the host's engine knows them (`podman image inspect`). */
function inspectImage(image: string): Promise<ImageCommand> {
  return new Promise((resolve, reject) => {
    execFile(
      "podman",
      ["image", "inspect", "--format", "{{json .Config}}", "--", image],
      { maxBuffer: 4 << 20 },
      (err, stdout, stderr) => {
        if (err) {
          reject(
            new WarrenError(
              "box.unavailable",
              `the image ${image} is not on this host's engine: ${(stderr || err.message).trim()}`,
            ),
          );
          return;
        }
        const config = JSON.parse(stdout) as { Entrypoint?: string[] | null; Cmd?: string[] | null } | null;
        resolve({ entrypoint: config?.Entrypoint ?? [], cmd: config?.Cmd ?? [] });
      },
    );
  });
}

interface ImageDeps {
  db: Db;
  /** How the image's command is read (default: the host's engine). */
  inspect?: (image: string) => Promise<ImageCommand>;
}

export class ImageRunner implements AgentRunner {
  constructor(private readonly d: ImageDeps) {}

  async run(ctx: AgentRunContext): Promise<AgentRunResult> {
    const work = ctx.workload;
    const [m] = await this.d.db
      .select({ image: schema.machines.image })
      .from(schema.machines)
      .where(eq(schema.machines.id, work.machine.id));
    if (!m?.image)
      throw new WarrenError(
        "machine.capability_unavailable",
        "image: an image-kind agent runs its machine's own image; this machine names none (an image needs the oci or kubernetes provider: PATCH the machine's image there)",
      );
    const argv = imageArgv(m.image, await (this.d.inspect ?? inspectImage)(m.image));
    const usage = () => ({
      ...ctx.gateway.usage(),
      steps: ctx.gateway.usage().calls,
      tool_calls: 0,
      tool_refusals: 0,
    });
    await work.stage({ input: Buffer.from(ctx.input, "utf8") });
    await ctx.events("image", { image: m.image, argv });
    // the run's token reaches the entrypoint as a harness CLI's does: its models through the gateway
    const main = await runMainCommand(
      ctx,
      { argv, own: { [TOKEN_VAR]: ctx.gateway.token, WARREN_GATEWAY_URL: GATEWAY_IN_BOX } },
      "the image's entrypoint",
    );
    return {
      ...main,
      usage: usage(),
      models: [],
    };
  }
}
