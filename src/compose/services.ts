// The services, constructed in dependency order on the base (base.ts): each is given what it
// uses, nothing is set afterwards. Registries (the boxes' bridges, the runners of agent kinds)
// are filled here too, by name.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Agents } from "../agents/service.js";
import { Bridges } from "../bridges/index.js";
import { Conversations, Personas } from "../conversations/index.js";
import { Egress } from "../egress/service.js";
import { Exec } from "../exec/service.js";
import { Guilds } from "../guilds/service.js";
import { DiskCaps } from "../homes/caps.js";
import { readAgentFile, readHomeFile } from "../homes/files.js";
import { parseHomePath } from "../homes/paths.js";
import { Homes } from "../homes/service.js";
import { isWarrenError } from "../errors.js";
import { Machines } from "../machines/service.js";
import { Gateway } from "../models/gateway.js";
import { ModelHttpFace } from "../models/http.js";
import { Prices } from "../models/prices.js";
import { Orgs } from "../orgs/service.js";
import { PreviewGrants } from "../preview/index.js";
import { Records } from "../records/index.js";
import { AssistantRunner } from "../runs/assistant.js";
import { HarnessRunner, installedVersion } from "../runs/harness.js";
import { AgentRunners } from "../runs/kinds.js";
import { RunRecorder } from "../runs/recorder.js";
import { GenerationRegistry } from "../runs/registry.js";
import { Runs } from "../runs/service.js";
import { DirRunStaging } from "../runs/staging.js";
import { connectBoxd, MachineRuntime } from "../runtime/index.js";
import { AgentCalls } from "../secrets/calls.js";
import { Terminals } from "../terminal/index.js";
import { createToolGateway } from "../tools/gateway.js";
import { toolPolicyProblem } from "../tools/policy.js";
import { Tools } from "../tools/service.js";
import { Workloads } from "../workloads/index.js";
import type { Base } from "./base.js";

export type Services = Awaited<ReturnType<typeof buildServices>>;

export async function buildServices(
  base: Base,
  o: { version: string; egressHosts?: Record<string, string[]> | undefined },
) {
  const { config, store, provider, access, secrets, logger, metrics } = base;
  const db = store.db;
  const layout = provider.homes;
  const registry = new GenerationRegistry(config.WARREN_ORG_MAX_RUNS);
  // agents' calls from inside their boxes (warren-secret), and connections from their
  // commands to the boxes' bridge ports (BOX_BRIDGES), a handler per name (registered below)
  // (the uid-to-agent lookup is Agents', made below: calls and bridges come once boxes run)
  const agentAt = (machineId: string, uid: number) => agents.atUid(machineId, uid);
  const agentCalls = new AgentCalls({
    secrets,
    agentAt,
    readHomeFile: (m, a, p, max) => readAgentFile(layout.homeDir(m, a), a, p, max),
    logger,
  });
  const bridges = new Bridges(agentAt, logger);
  // the one writer of the records an agent's work leaves, redacted of the agent's secrets
  const records = new Records({ db, redactorOf: async (agent) => (await secrets.resolve(agent)).redactor });
  const runtime = new MachineRuntime({
    db,
    provider,
    logger,
    metrics,
    connect: connectBoxd,
    paths: { data: base.state.data, contracts: base.state.contracts, harness: config.WARREN_HARNESS_DIR },
    idleMs: config.BOX_IDLE_S * 1000,
    // idle boxes are paused first (frozen in memory), stopped at BOX_IDLE_S
    pauseMs: config.BOX_PAUSE_S * 1000,
    warmPool: config.BOX_WARM_POOL,
    busyAgents: () => registry.activeAgents(),
    pids: config.BOX_PIDS,
    // boxd hears from its server well within BOX_ORPHAN_S
    keepaliveMs:
      config.BOX_ORPHAN_S > 0 ? Math.max(250, Math.min(10_000, (config.BOX_ORPHAN_S * 1000) / 3)) : 10_000,
    onCall: (machineId, call) => agentCalls.handle(machineId, call),
    onBridge: bridges.accept,
    redact: (agentId, value) => records.redactedFor(agentId, value),
  });

  const staging = new DirRunStaging((machineId) => provider.runFilesDir(machineId));
  // the one door of every agent's work in its box
  const workloads = new Workloads({ db, runtime, homes: layout, secrets, staging, logger });
  const caps = new DiskCaps(db, layout, config.WORKSPACE_MAX_MIB);
  const recorder = new RunRecorder({
    db,
    records,
    registry,
    workloads,
    caps,
    runtime,
    logger,
    version: o.version,
  });

  const orgs = new Orgs(db, access);
  const machines = new Machines(db, access, layout, runtime);
  const agents: Agents = new Agents({
    db,
    access,
    machines,
    layout,
    control: runtime,
    config,
    checkToolPolicy: (text) => toolPolicyProblem(text),
    cancelGeneration: (agentId) => recorder.stopAgent(agentId, "the agent is being deleted"),
    addressRule: base.addressRule,
  });
  const guilds = new Guilds(db, access, agents);
  const exec = new Exec(agents, workloads, metrics);
  // the agents' way out of their boxes: the `egress` bridge into the filtering proxy
  const egress = new Egress({
    records,
    db,
    agents,
    logger,
    runOf: (agentId) => registry.forAgent(agentId)?.runId,
    maxConnections: config.EGRESS_MAX_CONNECTIONS,
    rule: base.addressRule,
    own: base.own,
    ...(o.egressHosts ? { hosts: o.egressHosts } : {}),
  });
  bridges.register("egress", egress.handler);
  const tools = new Tools({ layout, secrets, logger, egress, fetch: base.connector });
  const terminals = new Terminals({ access, agents, workloads, runtime, logger });

  // a file of an agent's home by the home rules (MEMORY.md, the scripted provider's scripts)
  const readHome = (agent: { id: string; machineId: string }, p: string, maxBytes: number) =>
    readHomeFile(layout.homeDir(agent.machineId, agent.id), parseHomePath(agent.id, p), { maxBytes });
  const gateway = new Gateway({
    keysOf: (agent) => secrets.keysFor(agent),
    readHome: (agent, p) => readHome(agent, p, 4 * 1024 * 1024),
    prices: new Prices(config.WARREN_MODEL_PRICES),
    fetch: base.connector,
  });
  // the gateway bridge (127.0.0.1:3129 in every box): the models' HTTP face for harness CLIs,
  // and the run's tools over MCP at /mcp; both know the run by its workload token, and serve
  // a connection only the runs of the agent that opened it
  const face = new ModelHttpFace({
    gateway,
    ownerOf: (runId) => registry.forRun(runId)?.agentId,
    mounts: { "/mcp": createToolGateway({ sessions: gateway, toolsets: tools }) },
    warn: (msg, data) => logger.warn(data, msg),
  });
  bridges.register("gateway", (stream, who) => face.serve(stream, who));

  const runners = new AgentRunners();
  // the harness kinds the operator enabled, each run by its CLI installed on this host
  for (const kind of config.WARREN_HARNESS_KINDS) {
    if (!installedVersion(config.WARREN_HARNESS_DIR, kind))
      logger.warn(
        { kind, dir: config.WARREN_HARNESS_DIR },
        `the ${kind} CLI is not installed: its runs fail until scripts/harness.sh (make up) installs it`,
      );
    runners.register(
      kind,
      new HarnessRunner(kind, { db, toolsets: tools, hostDir: config.WARREN_HARNESS_DIR }),
    );
  }
  // the operator's system.md template, when there is one (else the built-in one)
  const template = await readFile(path.join(base.state.templates, "system.md"), "utf8").catch(
    (err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      return undefined;
    },
  );
  runners.register(
    "assistant",
    new AssistantRunner({
      ...(template !== undefined ? { template } : {}),
      toolsets: tools,
      readHome: (agent, p, maxBytes) =>
        readHome(agent, p, maxBytes).catch((err: unknown) => {
          if (isWarrenError(err) && err.code === "file.not_found") return null;
          throw err;
        }),
    }),
  );
  const runs = new Runs({ db, access, agents, recorder, gateway, runners });
  const homes = new Homes(db, agents, layout, config.WORKSPACE_MAX_MIB);
  const personas = new Personas({ db, access, agents, secrets });
  // conversations: each message a turn, a run the recorder drives, its history the thread so far
  const conversations = new Conversations({
    db,
    access,
    agents,
    personas,
    records,
    recorder,
    gateway,
    runners,
    historyBytes: config.WARREN_CONVERSATION_HISTORY_BYTES,
    logger,
  });
  // a box that stops interrupts the turns going on in it
  runtime.onStopped((machineId, reason) => conversations.boxStopped(machineId, reason));

  return {
    registry,
    runtime,
    bridges,
    records,
    workloads,
    recorder,
    orgs,
    machines,
    agents,
    guilds,
    exec,
    egress,
    tools,
    terminals,
    gateway,
    face,
    runners,
    runs,
    homes,
    personas,
    conversations,
    previewGrants: new PreviewGrants(),
  };
}
