// The services, constructed in dependency order on the base (base.ts): each is given what it
// uses, nothing is set afterwards. Registries (the boxes' bridges, the runners of agent kinds)
// are filled here too, by name.
import { Connections } from "../connections/service.js";
import { GithubApps } from "../connections/github.js";
import { Areas } from "../areas/service.js";
import { Branches } from "../conversations/branches.js";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { Agents, AgentSpecs } from "../agents/service.js";
import { EvalGates } from "../agents/gate.js";
import { Artifacts } from "../artifacts/index.js";
import { Bridges } from "../bridges/index.js";
import { Conversations, Personas } from "../conversations/index.js";
import { Egress } from "../egress/service.js";
import { Authorities } from "../egress/authority.js";
import { Injection } from "../egress/inject.js";
import { denyListOf } from "../egress/policy.js";
import { addToAllowList } from "../egress/ask.js";
import { Exec } from "../exec/service.js";
import { GuildDispatch } from "../dispatch/service.js";
import { Guilds } from "../guilds/service.js";
import { DiskCaps } from "../homes/caps.js";
import { DiskWatch } from "../homes/watch.js";
import { quotaSupport } from "../homes/quota.js";
import { readAgentFile, readHomeFile } from "../homes/files.js";
import { parseHomePath } from "../homes/paths.js";
import { Homes } from "../homes/service.js";
import { Machines } from "../machines/service.js";
import { defaultHost } from "../machines/capabilities.js";
import { Environments } from "../machines/environment.js";
import { agentAtUid } from "../machines/uids.js";
import { Gateway } from "../models/gateway.js";
import { ModelHttpFace } from "../models/http.js";
import { Prices } from "../models/prices.js";
import { Orgs } from "../orgs/service.js";
import { PreviewGrants } from "../preview/index.js";
import { Records } from "../records/index.js";
import { AssistantRunner } from "../runs/assistant.js";
import { HarnessRunner, installedVersion } from "../runs/harness.js";
import { ImageRunner } from "../runs/image.js";
import { AgentRunners } from "../runs/kinds.js";
import { RunRecorder } from "../runs/recorder.js";
import { RunResumer } from "../runs/resume.js";
import { GenerationRegistry } from "../runs/registry.js";
import { Runs } from "../runs/service.js";
import { DirRunStaging } from "../runs/staging.js";
import { connectBoxd, MachineRuntime } from "../runtime/index.js";
import { ScheduleFirer, Schedules } from "../schedules/index.js";
import { AgentCalls } from "../secrets/calls.js";
import { Terminals } from "../terminal/index.js";
import { Browsers } from "../browser/service.js";
import { BrowserWatches } from "../browser/watch.js";
import { createToolGateway } from "../tools/gateway.js";
import { toolPolicyProblem } from "../policy/tool-policy.js";
import { Tools } from "../tools/service.js";
import { Approvals } from "../approvals/service.js";
import { Budgets } from "../budgets/ledger.js";
import { Retention } from "../records/retention.js";
import { Evals } from "../evals/service.js";
import { Evidence } from "../evals/evidence.js";
import { Guardrails, guardrailPolicy } from "../policy/guardrails.js";
import { Versions } from "../versions/service.js";
import { Workloads } from "../workloads/index.js";
import { Workspaces } from "../workspaces/service.js";
import { instanceOfConversation } from "../workspaces/instances.js";
import { Flows } from "../flows/service.js";
import { ContractFlows } from "../flows/contracts.js";
import { Bundles } from "../workspaces/bundles.js";
import { EventBus } from "../events/index.js";
import type { Base } from "./base.js";

export type Services = Awaited<ReturnType<typeof buildServices>>;

export async function buildServices(
  base: Base,
  o: { version: string; egressHosts?: Record<string, string[]> | undefined },
) {
  const { config, store, provider, access, secrets, logger, metrics } = base;
  const db = store.db;
  // the one in-process event bus: what happened, told after the fact to whoever listens
  const events = new EventBus(logger);
  const layout = provider.homes;
  const registry = new GenerationRegistry(config.WARREN_ORG_MAX_RUNS, {
    perAgent: config.WARREN_QUEUE_PER_AGENT,
    perOrg: config.WARREN_QUEUE_PER_ORG,
  });
  // agents' calls from inside their boxes (warren-secret), and connections from their
  // commands to the boxes' bridge ports (BOX_BRIDGES), a handler per name (registered below)
  // (who runs as a uid: the lookup beside placement)
  const agentAt = agentAtUid(db);
  const agentCalls = new AgentCalls({
    secrets,
    agentAt,
    readHomeFile: (m, a, p, max) => readAgentFile(layout.homeDir(m, a), a, p, max),
    logger,
  });
  const bridges = new Bridges(agentAt, logger);
  // the one writer of the records an agent's work leaves, redacted of the agent's secrets
  const github = new GithubApps({ ...base, db, events, sealer: secrets.sealer, connector: base.connector });
  const records = new Records({
    db,
    redactorOf: async (agent) => github.redacting(agent.id, (await secrets.resolve(agent)).redactor),
    events,
  });
  // disk caps while commands run: the homes with live command trees, walked by the health loop
  const disk = new DiskWatch({
    db,
    layout,
    hostMaxMib: config.WORKSPACE_MAX_MIB,
    workspaceDir: (m, a) => base.workspaceLayout.agentRoot(m, a),
    intervalMs: config.BOX_HEALTH_MS,
    logger,
  });
  const quota = quotaSupport(base.state.workspaces);
  logger.info(
    { fs: quota.fs, mount: quota.mount, project_quota: quota.project },
    `disk caps: ${quota.detail}`,
  );
  const runtime = new MachineRuntime({
    disk,
    db,
    provider,
    logger,
    metrics,
    connect: connectBoxd,
    paths: {
      data: base.state.data,
      contracts: base.state.contracts,
      flows: base.state.flows,
      harness: config.WARREN_HARNESS_DIR,
      environments: base.state.environments,
    },
    idleMs: config.BOX_IDLE_S * 1000,
    // idle boxes are paused first (frozen in memory), stopped at BOX_IDLE_S
    pauseMs: provider.pauses === false ? 0 : config.BOX_PAUSE_S * 1000,
    warmPool: config.BOX_WARM_POOL,
    busyAgents: () => registry.activeAgents(),
    pids: config.BOX_PIDS,
    // boxd hears from its server well within BOX_ORPHAN_S
    keepaliveMs:
      config.BOX_ORPHAN_S > 0 ? Math.max(250, Math.min(10_000, (config.BOX_ORPHAN_S * 1000) / 3)) : 10_000,
    onCall: (machineId, call) => agentCalls.handle(machineId, call),
    onBridge: bridges.accept,
    redact: (agentId, value) => records.redactedFor(agentId, value),
    events,
  });

  const staging = new DirRunStaging((machineId) => provider.runFilesDir(machineId));
  // the one door of every agent's work in its box
  // each unit of work's /workspace by the agent's class (the agent's spec, read as Agents reads it)
  const specs = new AgentSpecs(db);
  const workspaces = new Workspaces({
    policy: base.policy,
    layout: base.workspaceLayout,
    specOf: (agent) => specs.of(agent),
    logger,
  });
  // secrets held by the proxy: each machine's interception authority, trusted in its box
  const authorities = new Authorities({ db, sealer: secrets.sealer, homes: layout });
  const bundles = new Bundles({ db, policy: base.policy });
  // flows made from contract files (WARREN_CONTRACTS), loaded at boot and on reload
  const contractFlows = new ContractFlows({
    db,
    dir: base.state.contracts,
    policy: base.policy,
    bundles,
    specOf: (agent) => specs.of(agent),
    logger,
  });
  // machines' environments over a base (the host's folders on local and oci, the Pods' image on kubernetes)
  const environments = new Environments({
    db,
    access,
    logger,
    root: base.state.environments,
    base: provider.name === "kubernetes" ? config.WARREN_K8S_IMAGE : "host",
  });
  const workloads = new Workloads({
    ...{ db, runtime, homes: layout, secrets, staging, logger, workspaces, moving: registry },
    authority: authorities,
    // the agent's own flow's folder at /opt/warren/contracts/self
    selfOf: (agentId, instance) => contractFlows.selfOf(agentId, instance),
    envRevisionOf: (machineId) => environments.revisionOf(machineId),
  });
  const caps = new DiskCaps(
    db,
    layout,
    config.WORKSPACE_MAX_MIB,
    (m, a) => base.workspaceLayout.agentRoot(m, a),
    (i) => base.workspaceLayout.flowHostDir(i),
  );
  const recorder = new RunRecorder({
    ...{ db, records, registry, workloads, caps, runtime, logger, events, version: o.version },
    // each run's call log goes in its agent's runtime folder (runs/call-log.ts)
    runtimeDir: (machineId, agentId) => provider.runtimeDir(machineId, agentId),
  });

  const orgs = new Orgs(db, access);
  const machines = new Machines(db, access, layout, runtime, defaultHost(provider.name));
  // the agents' evaluation gates, read by agents, versions and runs, kept by the evaluations
  const gates = new EvalGates(db, access);
  const agents: Agents = new Agents({
    db,
    access,
    machines,
    layout,
    control: runtime,
    config,
    checkToolPolicy: (text) => toolPolicyProblem(text),
    // its work going on is stopped before it is deleted
    work: recorder,
    addressRule: base.addressRule,
    specs,
    // the evaluation gate: with it on, a change goes through a version
    gates,
    workspaces,
    // a contract flow's agent: its spec stays within its permission bundle
    bundles,
    events,
  });
  const guilds = new Guilds(db, access, agents, events);
  const exec = new Exec(agents, workloads, metrics);
  // a tool call a permit asks approval for waits for a person's decision there (and a
  // connection to a host a sandbox policy's network.ask names); an allowed host may join the list
  const approvals = new Approvals({
    db,
    access,
    records,
    addToPolicy: (who, agentId, args) => addToAllowList(agents, who, agentId, args),
    events,
  });
  // the agents' way out of their boxes: the `egress` bridge into the filtering proxy
  const egress = new Egress({
    records,
    db,
    agents,
    logger,
    runOf: (agentId) => registry.forAgent(agentId)?.runId,
    pinnedPolicy: (agentId) => {
      const runId = registry.forAgent(agentId)?.runId;
      return runId === undefined ? undefined : recorder.policyOfRun(runId);
    },
    maxConnections: config.EGRESS_MAX_CONNECTIONS,
    rule: base.addressRule,
    own: base.own,
    ...(o.egressHosts ? { hosts: o.egressHosts } : {}),
    inject: new Injection({
      ...{ db, secrets, authorities, track: (socket) => base.own.track(socket) },
      trustFile: path.join(base.state.root, "egress-trust.pem"),
    }),
    ask: {
      approvals,
      runSignal: (runId) => registry.forRun(runId)?.controller.signal,
      timeoutMs: config.EGRESS_ASK_TIMEOUT_S * 1000,
      events,
    },
  });
  bridges.register("egress", egress.handler);
  // the artifact store (notes, memory, scripts, collections), written by agents redacted as their records
  const artifacts = new Artifacts({ db, access, redactorOf: (agentId) => records.forAgent(agentId) });
  // the organisations' guardrails: every tool decision must also pass them
  const guardrails = new Guardrails(db, access, (text) => toolPolicyProblem(text));
  // accounts connected through OAuth 2.0: only the server reads their tokens, for the tools
  const connections = new Connections({ db, access, sealer: secrets.sealer, fetch: base.connector });
  // the agents' browsers: one Chromium per agent in its box, stopped when not used for the box's idle time
  const browsers = new Browsers({ workloads, runtime, events, logger, idleMs: config.BOX_IDLE_S * 1000 });
  const tools = new Tools({
    browsers,
    layout,
    secrets,
    secretRequestWaitMs: config.WARREN_SECRET_REQUEST_WAIT_S * 1000,
    logger,
    environments,
    egress,
    fetch: base.connector,
    connections,
    // read at each hop of each fetch: a list changed while a run goes on bounds its next fetch
    fetchFor: (orgId) =>
      base.connectorWith(async (targets) => {
        const deny = await guardrails.networkDenyOf(orgId);
        if (deny.length === 0) return undefined;
        const named = denyListOf(deny);
        for (const target of targets) {
          const entry = named(target);
          if (entry !== undefined) return { target, entry };
        }
        return undefined;
      }),
    artifacts,
    approvals,
    guardrailOf: async (orgId) => {
      const text = await guardrails.toolPolicyOf(orgId);
      return text.trim() === "" ? null : guardrailPolicy(text);
    },
  });
  const terminals = new Terminals({ access, agents, workloads, runtime, events, logger });
  // watching an agent's browser and taking it over (GET /api/agents/:id/browser/watch)
  const browserWatches = new BrowserWatches({ access, agents, browsers, db, logger });

  // a file of an agent's home by the home rules (the scripted provider's scripts)
  const readHome = (agent: { id: string; machineId: string }, p: string, maxBytes: number) =>
    readHomeFile(layout.homeDir(agent.machineId, agent.id), parseHomePath(agent.id, p), { maxBytes });
  // the organisations' budgets, reserved in before every model call
  const budgets = new Budgets(db, access);
  const gateway = new Gateway({
    budgets,
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

  const runners = new AgentRunners().register("image", new ImageRunner({ db }));
  // the harness kinds the operator enabled, each run by its CLI installed on this host
  for (const kind of config.WARREN_HARNESS_KINDS) {
    if (!installedVersion(config.WARREN_HARNESS_DIR, kind))
      logger.warn(
        { kind, dir: config.WARREN_HARNESS_DIR },
        `the ${kind} CLI is not installed: its runs fail until scripts/harness.sh (make up) installs it`,
      );
    runners.register(
      kind,
      new HarnessRunner(kind, {
        db,
        toolsets: tools,
        hostDir: config.WARREN_HARNESS_DIR,
        memoryOf: (agent) => artifacts.forAgent(agent).readMemory(),
      }),
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
      memoryOf: (agent) => artifacts.forAgent(agent).readMemory(),
    }),
  );
  // versions of agents' specs, and the one a run keeps (asked by number, a canary's, the current)
  const versions = new Versions({
    db,
    agents,
    checkToolPolicy: (text) => toolPolicyProblem(text),
    addressRule: base.addressRule,
    gate: (agentId, version) => gates.check(agentId, version),
    bundles,
  });
  const runs = new Runs({
    db,
    access,
    agents,
    recorder,
    gateway,
    runners,
    versionFor: (agent, ask) => versions.forRun(agent, ask),
    gate: (agentId, version) => gates.check(agentId, version),
    approvalWaiting: (runId) => approvals.waitingOf(runId),
    suspend: (runId, agentId, state) => records.suspendRun(runId, agentId, state),
  });
  const areas = new Areas(db, access);
  const personas = new Personas({ db, access, agents, secrets });
  // conversations: each message a turn, a run the recorder drives, its history the thread so far
  const conversations = new Conversations({
    db,
    access,
    agents,
    personas,
    areas,
    branches: new Branches(db, workloads, layout),
    records,
    recorder,
    gateway,
    runners,
    historyBytes: config.WARREN_CONVERSATION_HISTORY_BYTES,
    logger,
    // a conversation held in a flow instance: its turns work in the instance's /workspace
    instanceOf: (conversationId) => instanceOfConversation(db, conversationId),
    canaryFor: (agent, key) => versions.canaryFor(agent, key),
    suspend: (runId, agentId, state) => records.suspendRun(runId, agentId, state),
    events,
  });
  // runs suspended at the last server's stop (a call waiting for an approval), taken up again
  const resumer = new RunResumer({
    db,
    records,
    recorder,
    agents,
    gateway,
    runners,
    versionFor: (agent, ask) => versions.forRun(agent, ask),
    logger,
  });
  // evaluation suites: each case a real run of the version evaluated; the gate on promotion
  const evals = new Evals({
    db,
    access,
    agents,
    gates,
    runs,
    settled: (runId) => recorder.settled(runId),
    logger,
  });
  // schedules: one ticker fires them, each fire a run through the runs service
  const firer = new ScheduleFirer({ db, runs, registry, events, logger });
  const schedules = new Schedules({ db, access, agents, firer });
  const homes = new Homes(db, agents, layout, config.WORKSPACE_MAX_MIB, areas, registry);
  // guild dispatch: a guild's messages, each a turn of one of its agents' conversations
  const dispatch = new GuildDispatch({
    db,
    access,
    agents,
    conversations,
    runners,
    registry,
    events,
    logger,
  });
  const flows: Flows = new Flows({
    db,
    access,
    runs,
    conversations,
    layout: base.workspaceLayout,
    contracts: contractFlows,
  });
  // the boot check (contracts_loaded) has parsed them; a contract naming what is not here is skipped, logged
  await contractFlows.load();

  return {
    registry,
    events,
    runtime,
    bridges,
    records,
    workloads,
    recorder,
    orgs,
    machines,
    environments,
    agents,
    guilds,
    artifacts,
    exec,
    egress,
    tools,
    connections,
    github,
    terminals,
    browsers,
    browserWatches,
    gateway,
    face,
    runners,
    runs,
    resumer,
    versions,
    approvals,
    evals,
    guardrails,
    budgets,
    // run outputs and traces past their organisation's retention_days are deleted
    retention: new Retention(db, logger),
    evidence: new Evidence(db, access),
    homes,
    areas,
    personas,
    conversations,
    firer,
    schedules,
    dispatch,
    workspaces,
    flows,
    staging,
    previewGrants: new PreviewGrants(),
  };
}
