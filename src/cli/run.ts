// Carries out one parsed command with the SDK and prints the answer for people or for scripts.
import { once } from "node:events";
import { readFile, writeFile } from "node:fs/promises";
import {
  isWarrenApiError,
  WarrenClient,
  type ExecRequest,
  type Run,
  type SandboxPolicyInput,
} from "../sdk/index.js";
import { parseCli, UsageError, type Cli, type Command, type Target } from "./args.js";
import {
  agentColumns,
  detailView,
  eventColumns,
  exitCodeOf,
  exitNote,
  guildColumns,
  listView,
  machineColumns,
  memberColumns,
  orgColumns,
  runColumns,
  runView,
  usageView,
} from "./format.js";
import { helpText, shortHelp } from "./help.js";

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: Record<string, string | undefined>;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** Default: `serve()` of the control plane, loaded only when asked for. */
  serve?: (env: Record<string, string | undefined>) => Promise<void>;
}

/** A failure on this side (a local file, bad JSON in a policy file): printed like a server error. */
class LocalError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "LocalError";
  }
}

async function write(stream: NodeJS.WritableStream, chunk: string | Uint8Array): Promise<void> {
  if (!stream.write(chunk)) await once(stream, "drain");
}

/** Runs the CLI; answers the process's exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let cli: Cli;
  try {
    cli = parseCli(argv, io.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    await write(io.stderr, `error: ${err.message}\n\n${shortHelp(err.topic)}`);
    return 2;
  }
  try {
    return await execute(cli, io);
  } catch (err) {
    if (isWarrenApiError(err) || err instanceof LocalError) {
      await write(io.stderr, `error: ${err.code}: ${err.message}\n`);
      return 1;
    }
    if (err instanceof UsageError) {
      await write(io.stderr, `error: ${err.message}\n\n${shortHelp(err.topic)}`);
      return 2;
    }
    throw err;
  }
}

async function readLocal(file: string, stdin: NodeJS.ReadableStream, what: string): Promise<Buffer> {
  if (file === "-") {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    return Buffer.concat(chunks);
  }
  try {
    return await readFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    throw new LocalError("local.read", `could not read ${what} ${file} (${code})`);
  }
}

function targetBody(target: Target): Pick<ExecRequest, "argv" | "command"> {
  return "argv" in target ? { argv: target.argv } : { command: target.command };
}

async function execute(cli: Cli, io: CliIo): Promise<number> {
  const cmd: Command = cli.command;
  const out = (text: string) => write(io.stdout, text);
  /** Prints the answer: exact JSON for scripts, or what `human` makes of it. */
  const show = async (answer: unknown, human: () => string): Promise<number> => {
    if (cli.json) {
      if (answer !== undefined) await out(`${JSON.stringify(answer, null, 2)}\n`);
    } else {
      await out(human());
    }
    return 0;
  };

  if (cmd.kind === "help") {
    await out(helpText(cmd.topic));
    return 0;
  }
  if (cmd.kind === "serve") {
    const serve = io.serve ?? (await import("../main.js")).serve;
    await serve(io.env);
    return 0;
  }

  const client = new WarrenClient({
    baseUrl: cli.url,
    headers: cli.headers,
    ...(io.fetch ? { fetch: io.fetch } : {}),
  });

  switch (cmd.kind) {
    case "orgs.create": {
      const org = await client.orgs.create({ name: cmd.name });
      return show(org, () => detailView(org));
    }
    case "orgs.list": {
      const list = await client.orgs.list();
      return show(list, () => listView("organisations", orgColumns, list.items));
    }
    case "orgs.get": {
      const org = await client.orgs.get(cmd.id);
      return show(org, () => detailView(org));
    }
    case "orgs.delete":
      await client.orgs.delete(cmd.id);
      return show(undefined, () => `deleted ${cmd.id}\n`);
    case "orgs.members": {
      const list = await client.orgs.members(cmd.id);
      return show(list, () => listView("members", memberColumns, list.items));
    }
    case "orgs.set-member": {
      const member = await client.orgs.setMember(cmd.id, { email: cmd.email, role: cmd.role });
      return show(member, () => detailView(member));
    }
    case "orgs.remove-member":
      await client.orgs.removeMember(cmd.id, cmd.userId);
      return show(undefined, () => `removed ${cmd.userId} from ${cmd.id}\n`);

    case "machines.create": {
      const machine = await client.machines.create(cmd.body);
      return show(machine, () => detailView(machine));
    }
    case "machines.list": {
      const list = await client.machines.list({ org_id: cmd.orgId });
      return show(list, () => listView("machines", machineColumns, list.items));
    }
    case "machines.get": {
      const machine = await client.machines.get(cmd.id);
      return show(machine, () => detailView(machine));
    }
    case "machines.update": {
      const machine = await client.machines.update(cmd.id, cmd.body);
      return show(machine, () => detailView(machine));
    }
    case "machines.stop": {
      const machine = await client.machines.stop(cmd.id);
      return show(machine, () => detailView(machine));
    }
    case "machines.delete":
      await client.machines.delete(cmd.id);
      return show(undefined, () => `deleted ${cmd.id}\n`);

    case "agents.create": {
      const agent = await client.agents.create(cmd.body);
      return show(agent, () => detailView(agent));
    }
    case "agents.list": {
      const list = await client.agents.list({ org_id: cmd.orgId, machine_id: cmd.machineId });
      return show(list, () => listView("agents", agentColumns, list.items));
    }
    case "agents.get": {
      const agent = await client.agents.get(cmd.id);
      return show(agent, () => detailView(agent));
    }
    case "agents.update": {
      const body = { ...cmd.body };
      if (cmd.policyFile !== undefined) {
        const text = (await readLocal(cmd.policyFile, io.stdin, "the policy file")).toString("utf8");
        try {
          body.sandbox_policy = JSON.parse(text) as SandboxPolicyInput;
        } catch (err) {
          throw new LocalError(
            "local.policy",
            `${cmd.policyFile} is not JSON (${(err as Error).message}); the server checks the rest`,
          );
        }
      }
      const agent = await client.agents.update(cmd.id, body);
      return show(agent, () => detailView(agent));
    }
    case "agents.delete":
      await client.agents.delete(cmd.id);
      return show(undefined, () => `deleted ${cmd.id}\n`);

    case "guilds.create": {
      const guild = await client.guilds.create(cmd.body);
      return show(guild, () => detailView(guild));
    }
    case "guilds.list": {
      const list = await client.guilds.list({ org_id: cmd.orgId });
      return show(list, () => listView("guilds", guildColumns, list.items));
    }
    case "guilds.get": {
      const guild = await client.guilds.get(cmd.id);
      return show(guild, () => detailView(guild));
    }
    case "guilds.delete":
      await client.guilds.delete(cmd.id);
      return show(undefined, () => `deleted ${cmd.id}\n`);
    case "guilds.add-agent":
      await client.guilds.addAgent(cmd.id, cmd.agentId);
      return show(undefined, () => `added ${cmd.agentId} to ${cmd.id}\n`);
    case "guilds.remove-agent":
      await client.guilds.removeAgent(cmd.id, cmd.agentId);
      return show(undefined, () => `removed ${cmd.agentId} from ${cmd.id}\n`);

    case "exec": {
      const request: ExecRequest = { ...targetBody(cmd.target) };
      if (cmd.cwd !== undefined) request.cwd = cmd.cwd;
      if (cmd.env !== undefined) request.env = cmd.env;
      if (cmd.timeoutMs !== undefined) request.timeout_ms = cmd.timeoutMs;
      if (cmd.limits !== undefined) request.limits = cmd.limits;
      if (cmd.stdinFile !== undefined)
        request.stdin = (await readLocal(cmd.stdinFile, io.stdin, "the stdin file")).toString("utf8");
      const agent = client.agent(cmd.agentId);
      if (cli.json) {
        const result = await agent.exec(request);
        await out(`${JSON.stringify(result, null, 2)}\n`);
        return exitCodeOf(result);
      }
      for await (const event of agent.execStream(request)) {
        if ("stream" in event) {
          await write(event.stream === "stdout" ? io.stdout : io.stderr, event.data);
        } else {
          const note = exitNote(event);
          if (note) await write(io.stderr, note);
          return exitCodeOf(event);
        }
      }
      return 1;
    }

    case "runs.start": {
      let input: string | undefined;
      if (cmd.input && "text" in cmd.input) input = cmd.input.text;
      else if (cmd.input)
        input = (await readLocal(cmd.input.file, io.stdin, "the input file")).toString("utf8");
      const run = await client.runs.create(cmd.agentId, {
        ...targetBody(cmd.target),
        ...(input !== undefined ? { input } : {}),
        ...(cmd.timeoutS !== undefined ? { timeout_s: cmd.timeoutS } : {}),
        ...(cmd.limits !== undefined ? { limits: cmd.limits } : {}),
      });
      if (!cmd.wait) return show(run, () => runView(run));
      const timeoutMs = cmd.timeoutS !== undefined ? cmd.timeoutS * 1000 + 60_000 : 24 * 3600_000;
      return finished(await client.runs.wait(run.id, { timeoutMs }));
    }
    case "runs.get": {
      const run = await client.runs.get(cmd.id);
      return show(run, () => runView(run));
    }
    case "runs.events": {
      const list = await client.runs.events(cmd.id);
      return show(list, () => listView("events", eventColumns, list.items));
    }
    case "runs.cancel": {
      const run = await client.runs.cancel(cmd.id);
      return show(run, () => runView(run));
    }
    case "runs.list": {
      const list = await client.runs.list(cmd.agentId);
      return show(list, () => listView("runs", runColumns, list.items));
    }
    case "runs.wait": {
      const run = await client.runs.wait(
        cmd.id,
        cmd.timeoutMs !== undefined ? { timeoutMs: cmd.timeoutMs } : {},
      );
      return show(run, () => runView(run));
    }

    case "files.get": {
      const bytes = await client.agent(cmd.agentId).files.read(cmd.path);
      if (cmd.out === undefined) {
        await write(io.stdout, bytes);
        return 0;
      }
      try {
        await writeFile(cmd.out, bytes);
      } catch (err) {
        throw new LocalError(
          "local.write",
          `could not write ${cmd.out} (${(err as NodeJS.ErrnoException).code ?? "unwritable"})`,
        );
      }
      return show(undefined, () => `saved ${cmd.path} (${bytes.length} bytes) to ${cmd.out}\n`);
    }
    case "files.put": {
      const bytes = await readLocal(cmd.source ?? "-", io.stdin, "the local file");
      await client.agent(cmd.agentId).files.write(cmd.path, bytes);
      return show(undefined, () => `wrote ${bytes.length} bytes to ${cmd.path}\n`);
    }
    case "usage": {
      const usage = await client.agent(cmd.agentId).usage();
      return show(usage, () => usageView(usage));
    }
  }

  /** After `runs start --wait`: the run's output (or its JSON), and its exit code. */
  async function finished(run: Run): Promise<number> {
    if (cli.json) await out(`${JSON.stringify(run, null, 2)}\n`);
    else if (run.output) await out(run.output);
    if (!cli.json && run.status !== "succeeded") {
      await write(
        io.stderr,
        `warren: run ${run.id} ended ${run.status}${run.status_reason ? ` (${run.status_reason})` : ""}\n`,
      );
    }
    if (run.status === "succeeded") return 0;
    if (run.status === "timed_out") return 124;
    return run.exit_code !== null && run.exit_code > 0 ? Math.min(255, run.exit_code) : 1;
  }
}
