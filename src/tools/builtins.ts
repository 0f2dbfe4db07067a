// The builtin tools: the agent's home files (read on the host by the home file rules: no link,
// regular files only, never a path outside the home), a command in the box as the agent (the
// walls of exec), and a GET of a URL under the agent's network allow-list.
import type { AgentRow } from "../agents/service.js";
import type { AgentArtifacts } from "../artifacts/index.js";
import { namesOnTheWay, standing } from "../areas/fence.js";
import type { HomeLayout, Trust } from "../boxes/index.js";
import { ARTIFACT_TOOLS, BROWSER_TOOLS, type BUILTIN_TOOLS } from "../contract/spec.js";
import { browserTool, type BrowserDriver, type BrowserTool } from "./browser.js";
import { commandAnswer } from "./answer.js";
import { artifactTool, type ArtifactTool } from "./artifacts.js";
import { listHomeFolder, readHomeFile, writeHomeFile } from "../homes/files.js";
import { parseHomePath } from "../homes/paths.js";
import { homeFile, homeFolder, httpUrl } from "./canonical.js";
import { uidOf } from "../machines/placement.js";
import type { ResolvedSecrets } from "../secrets/service.js";
import type { Workload } from "../workloads/index.js";
import type { Environments } from "../machines/environment.js";
import { getOnce, type EgressRoute } from "./fetch.js";
import { secretRequestTool } from "./secret-request.js";
import type { ApprovalDoor } from "../approvals/types.js";
import {
  bodyText,
  bounded,
  MAX_OUTPUT_BYTES,
  num,
  params,
  str,
  textParam,
  ToolFailure,
  type ToolImpl,
} from "./impl.js";

/** The largest file read_file reads and write_file writes. */
export const FILE_TOOL_BYTES = 1024 * 1024;
/** The most entries list_files gives. */
const LIST_ENTRIES = 1000;
/** run_command's default and longest time. */
const COMMAND_DEFAULT_S = 60;
const COMMAND_MAX_S = 600;
/** web_fetch: the most bytes read, redirects followed, and its time. */
const FETCH_MAX_BYTES = 1024 * 1024;
const FETCH_REDIRECTS = 5;
const FETCH_TIMEOUT_MS = 30_000;

export interface BuiltinEnv {
  agent: AgentRow;
  trust: Trust;
  layout: HomeLayout;
  /** The run's door: run_command goes through it, redacted like every command. */
  workload: Workload;
  secrets: ResolvedSecrets;
  runId: string;
  /** web_fetch's way out: the egress proxy, as the agent. */
  egress: EgressRoute;
  /** The artifact store as this agent (the note, memory, record and script tools). */
  artifacts: AgentArtifacts;
  /** secret_request's wait (the approval door), the agent's secrets as they are now, and its time. */
  approvals?: ApprovalDoor | undefined;
  resolveSecrets: (agent: { id: string; orgId: string }) => Promise<ResolvedSecrets>;
  secretRequestWaitMs?: number | undefined;
  /** Where env_propose makes its proposal (absent: the tool answers that none can be made). */
  environments?: Pick<Environments, "propose"> | undefined;
  /** The agents' browsers (the browser tools); absent: those tools answer that there is none. */
  browsers?: BrowserDriver | undefined;
}

const pathParam = (what: string) =>
  textParam(`${what}: relative to the home (or /home/<agent id>/...), inside it`);

/** A path of the home the tool may reach: inside the work's fence (a listing: or on the way to it). */
function homePath(env: BuiltinEnv, raw: string, listing = false): string[] {
  const components = parseHomePath(env.agent.id, raw);
  fenced(env, components, listing);
  return components;
}

/**
 * Where that path is on the host, as the work's commands see it (a conversation's worktree at
 * its repository's folder; no .git for a fenced turn): src/workloads/home-view.ts.
 */
function onDisk(env: BuiltinEnv, components: readonly string[]): string[] {
  const disk = env.workload.onDisk(components);
  if (!disk) throw new ToolFailure("that path is not there for this conversation (its history is not kept)");
  return disk;
}

function fenced(env: BuiltinEnv, components: readonly string[], listing: boolean): void {
  const where = standing(components, env.workload.fence);
  if (where === "inside" || (listing && where === "above")) return;
  throw new ToolFailure("that path is outside the folders this conversation holds");
}

function readFile(env: BuiltinEnv): ToolImpl {
  return {
    kind: "builtin",
    tool: {
      name: "read_file",
      description: `Reads a text file of your home (at most ${FILE_TOOL_BYTES} bytes). Links are not followed.`,
      parameters: params({ path: pathParam("the file") }, ["path"]),
    },
    canonical: { path: homeFile(env.agent.id) },
    async run(args) {
      const dir = env.layout.homeDir(env.agent.machineId, env.agent.id);
      const data = await readHomeFile(dir, onDisk(env, homePath(env, str(args, "path"))), {
        maxBytes: FILE_TOOL_BYTES,
        noLinks: true,
      });
      return data.toString("utf8");
    },
  };
}

function writeFile(env: BuiltinEnv): ToolImpl {
  return {
    kind: "builtin",
    tool: {
      name: "write_file",
      description:
        "Creates or replaces a file of your home with the given text; missing folders are made. Links are refused.",
      parameters: params({ path: pathParam("the file"), content: textParam("the file's text") }, [
        "path",
        "content",
      ]),
    },
    canonical: { path: homeFile(env.agent.id) },
    async run(args) {
      const components = homePath(env, str(args, "path"));
      const data = Buffer.from(str(args, "content"), "utf8");
      const dir = env.layout.homeDir(env.agent.machineId, env.agent.id);
      await writeHomeFile(dir, onDisk(env, components), data, {
        maxBytes: FILE_TOOL_BYTES,
        ...env.layout.fileOwner(uidOf(env.agent.slot), env.trust),
      });
      return `wrote ${data.length} bytes to ${components.join("/")}`;
    },
  };
}

function listFiles(env: BuiltinEnv): ToolImpl {
  return {
    kind: "builtin",
    tool: {
      name: "list_files",
      description:
        "Lists a folder of your home (the home itself when no path is given): name, type and size.",
      parameters: params({ path: pathParam("the folder") }),
    },
    canonical: { path: homeFolder(env.agent.id) },
    async run(args) {
      // canonical: "." for the home itself
      const raw = str(args, "path", { optional: true }) ?? ".";
      const components = raw === "." ? [] : homePath(env, raw, true);
      fenced(env, components, true);
      const dir = env.layout.homeDir(env.agent.machineId, env.agent.id);
      const listed = await listHomeFolder(dir, onDisk(env, components), LIST_ENTRIES);
      const fence = env.workload.fence;
      // a folder on the way to held folders shows only that way
      const onTheWay =
        fence && standing(components, fence) === "above" ? namesOnTheWay(components, fence) : null;
      const entries = onTheWay
        ? listed.entries.filter((e) => e.type === "folder" && onTheWay.has(e.name))
        : listed.entries;
      const truncated = listed.truncated;
      if (entries.length === 0) return "(empty folder)";
      const lines = entries.map((e) =>
        e.type === "file"
          ? `${e.name}\tfile\t${e.size}`
          : `${e.name}${e.type === "folder" ? "/" : ""}\t${e.type}`,
      );
      if (truncated) lines.push(`[... more than ${LIST_ENTRIES} entries; only the first are shown]`);
      return lines.join("\n");
    },
  };
}

function runCommand(env: BuiltinEnv): ToolImpl {
  return {
    kind: "builtin",
    tool: {
      name: "run_command",
      description: `Runs a shell command (bash -c) in your box as you, in your home unless cwd is given. Answers its exit code, stdout and stderr. At most ${COMMAND_MAX_S} s (default ${COMMAND_DEFAULT_S} s).`,
      parameters: params(
        {
          command: textParam("the shell command"),
          cwd: textParam("the folder to run in, relative to the home"),
          timeout_s: {
            type: "number",
            description: `seconds before it is killed (at most ${COMMAND_MAX_S})`,
          },
        },
        ["command"],
      ),
    },
    async run(args, signal) {
      const command = str(args, "command");
      const cwd = str(args, "cwd", { optional: true });
      const timeoutS = Math.min(COMMAND_MAX_S, Math.max(1, num(args, "timeout_s") ?? COMMAND_DEFAULT_S));
      const out = await env.workload.collect(
        { argv: ["/bin/bash", "-c", command], cwd, timeoutMs: timeoutS * 1000 },
        { limitBytes: MAX_OUTPUT_BYTES, signal },
      );
      return commandAnswer(out, timeoutS);
    },
  };
}

function webFetch(env: BuiltinEnv): ToolImpl {
  return {
    kind: "builtin",
    tool: {
      name: "web_fetch",
      description: `GETs an http or https URL and answers its status and body (text, at most ${FETCH_MAX_BYTES} bytes read). It goes through your network policy, like your commands' connections.`,
      parameters: params({ url: textParam("the URL") }, ["url"]),
    },
    canonical: { url: httpUrl },
    async run(args, signal) {
      let url = new URL(httpUrl(args.url, "url")!);
      const timeout = AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]);
      for (let hop = 0; ; hop++) {
        if (url.protocol !== "http:" && url.protocol !== "https:")
          throw new ToolFailure(`only http and https URLs can be fetched, not ${url.protocol}`);
        const res = await getOnce(url, FETCH_MAX_BYTES, timeout, env.egress);
        if (res.status >= 300 && res.status < 400 && res.location) {
          if (hop >= FETCH_REDIRECTS) throw new ToolFailure(`more than ${FETCH_REDIRECTS} redirects`);
          url = new URL(res.location, url);
          continue;
        }
        const text = env.secrets.redactor.redactText(bodyText(res.contentType, res.body));
        return bounded(
          `status ${res.status}${res.contentType ? `\ncontent-type: ${res.contentType}` : ""}${res.truncated ? `\n(first ${FETCH_MAX_BYTES} bytes)` : ""}\n\n${text}`,
        );
      }
    },
  };
}

function envPropose(env: BuiltinEnv): ToolImpl {
  return {
    kind: "builtin",
    tool: {
      name: "env_propose",
      description:
        "Proposes Debian packages for your machine's environment (for a tool you need that is not installed). An owner or admin of your organisation decides; nothing changes until they approve, and then your next turn finds the tools on its PATH. Answers the proposal with the exact versions it names.",
      parameters: params(
        {
          packages: {
            type: "array",
            items: { type: "string" },
            description: "Debian package names, e.g. ripgrep",
          },
          why: textParam("why you need them, for the person who decides"),
        },
        ["packages", "why"],
      ),
    },
    async run(args) {
      const packages = args.packages;
      if (!Array.isArray(packages) || packages.some((p) => typeof p !== "string"))
        throw new ToolFailure("packages: give a list of Debian package names");
      if (!env.environments) throw new ToolFailure("this server takes no environment proposals");
      const p = await env.environments
        .propose({ agent: env.agent }, env.agent.machineId, {
          packages: packages as string[],
          why: str(args, "why"),
        })
        .catch((err: unknown) => {
          throw new ToolFailure(err instanceof Error ? err.message : String(err));
        });
      const names = p.packages.map((x) => `${x.name} ${x.version}`).join(", ");
      return `proposal ${p.id} made (pending): ${names}. An owner or admin decides; nothing is installed until they approve.`;
    },
  };
}

const BUILDERS: Record<
  Exclude<(typeof BUILTIN_TOOLS)[number], ArtifactTool | BrowserTool>,
  (env: BuiltinEnv) => ToolImpl
> = {
  read_file: readFile,
  write_file: writeFile,
  list_files: listFiles,
  run_command: runCommand,
  web_fetch: webFetch,
  env_propose: envPropose,
  secret_request: (env) =>
    secretRequestTool({
      runId: env.runId,
      workload: env.workload,
      approvals: env.approvals,
      resolve: env.resolveSecrets,
      waitMs: env.secretRequestWaitMs,
    }),
};

export function builtinTool(name: (typeof BUILTIN_TOOLS)[number], env: BuiltinEnv): ToolImpl {
  const browser = BROWSER_TOOLS.find((t) => t === name);
  if (browser) return browserTool(browser, env);
  const artifact = ARTIFACT_TOOLS.find((t) => t === name);
  return artifact ? artifactTool(artifact, env) : BUILDERS[name as keyof typeof BUILDERS](env);
}
