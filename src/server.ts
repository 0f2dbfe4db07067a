// The composition root: config -> store -> provider -> services -> http.
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { Access } from "./access/index.js";
import { enforce, runChecks, stateProbes, type Probes } from "./boot/checks.js";
import { lockStateRoot } from "./boot/lock.js";
import { Agents } from "./agents/service.js";
import { Bridges } from "./bridges/index.js";
import { createProvider, type BoxProvider } from "./boxes/index.js";
import type { Config } from "./config/index.js";
import { Egress } from "./egress/service.js";
import { Exec } from "./exec/service.js";
import { Guilds } from "./guilds/service.js";
import { buildApp } from "./http/app.js";
import { agentRoutes, guildRoutes } from "./http/routes/agents.js";
import { egressRoutes } from "./http/routes/egress.js";
import { execRoutes } from "./http/routes/exec.js";
import { homeRoutes } from "./http/routes/homes.js";
import { portRoutes } from "./http/routes/ports.js";
import { runRoutes } from "./http/routes/runs.js";
import { terminalRoutes } from "./http/routes/terminal.js";
import { Terminals } from "./terminal/index.js";
import { DiskCaps } from "./homes/caps.js";
import { Homes } from "./homes/service.js";
import { MasterKeyError, resolveMasterKey } from "./secrets/master-key.js";
import { SealError } from "./secrets/crypto.js";
import { AgentCalls } from "./secrets/calls.js";
import { Secrets } from "./secrets/service.js";
import { secretRoutes } from "./http/routes/secrets.js";
import type pino from "pino";
import { Runs } from "./runs/service.js";
import { DirRunStaging } from "./runs/staging.js";
import { machineRoutes } from "./http/routes/machines.js";
import { orgRoutes } from "./http/routes/orgs.js";
import { Orgs } from "./orgs/service.js";
import { Machines } from "./machines/service.js";
import { createLogger, type Logger } from "./observability/log.js";
import { Metrics } from "./observability/metrics.js";
import { GenerationRegistry } from "./runs/registry.js";
import { connectBoxd, MachineRuntime } from "./runtime/index.js";
import { openStore, type Store } from "./store/index.js";
import { Tools } from "./tools/service.js";
import { Gateway } from "./models/gateway.js";
import { ModelHttpFace } from "./models/http.js";
import { createToolGateway } from "./tools/gateway.js";
import { toolPolicyProblem } from "./tools/policy.js";
import { readAgentFile } from "./homes/files.js";
import { Prices } from "./models/prices.js";
import { AssistantRunner } from "./runs/assistant.js";
import { Records } from "./records/index.js";
import { AgentRunners } from "./runs/kinds.js";
import { HarnessRunner, installedVersion } from "./runs/harness.js";
import { readHomeFile } from "./homes/files.js";
import { parseHomePath } from "./homes/paths.js";
import { isWarrenError } from "./errors.js";
import { createConnector, type GuardedFetch } from "./net/connector.js";
import { OwnEndpoints } from "./net/own.js";
import { AddressRule } from "./net/rule.js";
import { createPreviewServer, PreviewGrants, previewOrigin } from "./preview/index.js";
import type http from "node:http";

export interface Server {
  app: FastifyInstance;
  config: Config;
  store: Store;
  provider: BoxProvider;
  runtime: MachineRuntime;
  /** Handlers of the boxes' bridges (BOX_BRIDGES), by name. */
  bridges: Bridges;
  registry: GenerationRegistry;
  runs: Runs;
  /** Opens runs' toolsets (the Assistant loop's, and the tool gateway's for harness runs). */
  tools: Tools;
  /** Every model call of every run goes through it; its sessions know runs by workload token. */
  gateway: Gateway;
  /** The runners of agent kinds: a kind's module registers its runner here. */
  runners: AgentRunners;
  logger: Logger;
  /** The server's own listening endpoints and outgoing connections (never reached from a box, never believed). */
  own: OwnEndpoints;
  /** The guarded fetch of every server-side fetch on an agent's behalf. */
  connector: GuardedFetch;
  /**
   * Where the server may connect on an agent's behalf (the egress proxy's upstreams, every
   * server-side fetch): never its own endpoints, link-local or metadata; loopback and private
   * only inside WARREN_EGRESS_PRIVATE_ALLOW.
   */
  addressRule: AddressRule;
  /** The previews' listener (an agent's ports, each on an origin of its own); started by `listen`. */
  preview: http.Server;
  /**
   * Starts the API's listener and the previews' (WARREN_HOST; WARREN_PORT and
   * WARREN_PREVIEW_PORT unless given): answers both addresses.
   */
  listen(opts?: {
    host?: string;
    port?: number;
    previewPort?: number;
  }): Promise<{ url: string; previewUrl: string }>;
  /**
   * Stops serving: no new requests, in-flight ones drained; runs going on may finish for
   * `graceMs` (default 0), then the rest are cancelled as interrupted. Boxes keep running
   * for the next server to adopt, unless `stopBoxes`.
   */
  close(opts?: { graceMs?: number; stopBoxes?: boolean }): Promise<void>;
}

export interface ServerOptions {
  logger?: Logger;
  /** Where the server's own logger writes (default stdout); every secret value is redacted from it. */
  logDestination?: pino.DestinationStream;
  /** Metrics without the process-wide default collectors (many servers in one test process). */
  defaultMetrics?: boolean;
  /** Replaces boot checks' probes (tests simulate a missing part). */
  probes?: Probes;
  /** Names the egress proxy resolves from this table instead of the system's resolver (tests). */
  egressHosts?: Record<string, string[]>;
}

/** The boot checks of a configuration: the provider's probes of the host, the state tree's. */
export function bootProbes(config: Config, provider: BoxProvider, extra: Probes = {}, repair = true): Probes {
  const root = config.STATE_ROOT;
  return {
    ...provider.hostProbes({ repair }),
    ...stateProbes({
      root,
      run: path.join(root, "run"),
      workspaces: path.join(root, "workspaces"),
      data: path.join(root, "data"),
      contracts: path.join(root, "contracts"),
    }),
    ...extra,
  };
}

async function version(): Promise<string> {
  const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../package.json");
  try {
    return (JSON.parse(await readFile(pkg, "utf8")) as { version: string }).version;
  } catch {
    return "0.0.0";
  }
}

export async function createServer(config: Config, opts: ServerOptions = {}): Promise<Server> {
  // the server's log passes through the redaction of every secret value it holds (a logger
  // given by the caller is the caller's to filter)
  const held: { secrets?: Secrets } = {};
  const logger =
    opts.logger ??
    createLogger(config.LOG_LEVEL, opts.logDestination, (line) =>
      held.secrets ? held.secrets.logRedactor.redactText(line) : line,
    );
  const root = config.STATE_ROOT;
  const paths = {
    workspaces: path.join(root, "workspaces"),
    run: path.join(root, "run"),
    data: path.join(root, "data"),
    contracts: path.join(root, "contracts"),
    pglite: path.join(root, "pglite"),
  };
  await mkdir(root, { recursive: true, mode: 0o711 });
  await mkdir(paths.run, { recursive: true, mode: 0o700 });
  await mkdir(paths.workspaces, { recursive: true, mode: 0o711 });
  await mkdir(paths.data, { recursive: true, mode: 0o755 });
  await mkdir(paths.contracts, { recursive: true, mode: 0o755 });

  // one server per STATE_ROOT; released by close() or when the start fails
  const lock = lockStateRoot(root, paths.run);
  try {
    return await compose(config, opts, logger, paths, () => lock.release(), held);
  } catch (err) {
    lock.release();
    throw err;
  }
}

async function compose(
  config: Config,
  opts: ServerOptions,
  logger: Logger,
  paths: { workspaces: string; run: string; data: string; contracts: string; pglite: string },
  releaseLock: () => void,
  held: { secrets?: Secrets },
): Promise<Server> {
  const root = config.STATE_ROOT;

  // Secrets' key: checked at every start, so a lost or damaged key is found before it is needed.
  const masterKey = await resolveMasterKey(config, paths.run);
  if (masterKey.source === "generated")
    logger.warn(
      { file: masterKey.file },
      "generated a development master key; set WARREN_MASTER_KEY (64 hex characters) in production",
    );

  const provider = createProvider(config, {
    stateRoot: root,
    runRoot: paths.run,
    workspacesRoot: paths.workspaces,
    orphanAfterS: config.BOX_ORPHAN_S,
  });
  // what boxes need: refused when missing, unless accepted (WARREN_ALLOW_DEGRADED)
  const checks = await runChecks(bootProbes(config, provider, opts.probes), config.WARREN_ALLOW_DEGRADED);
  const { degraded } = enforce(checks);
  for (const c of checks) {
    if (c.accepted)
      logger.warn(
        { check: c.name, detail: c.detail, fix: c.fix },
        `running degraded: ${c.name} is missing (accepted by WARREN_ALLOW_DEGRADED)`,
      );
    else if (c.ok && /set to/.test(c.detail)) logger.info({ check: c.name }, c.detail);
  }

  // what no box and no server-side fetch may reach: the API's listener (and the previews'), a local database
  const own = new OwnEndpoints();
  if (config.DATABASE_URL) {
    const db = new URL(config.DATABASE_URL);
    own.addFixed(db.hostname, Number(db.port || 5432));
  }
  // the one rule of where the server connects on an agent's behalf, and the guarded fetch of
  // every server-side fetch (http and MCP tools, model APIs) built on it
  const addressRule = new AddressRule({ bound: config.WARREN_EGRESS_PRIVATE_ALLOW, own });
  const connector = createConnector({ rule: addressRule, own });
  const store = await openStore({ databaseUrl: config.DATABASE_URL, pgliteDir: paths.pglite });
  let ready = false;
  const metrics = new Metrics(opts.defaultMetrics ?? true);
  const registry = new GenerationRegistry(config.WARREN_ORG_MAX_RUNS);
  const layout = provider.homes;

  const runtime = new MachineRuntime({
    db: store.db,
    provider,
    logger,
    metrics,
    connect: connectBoxd,
    paths: { data: paths.data, contracts: paths.contracts, harness: config.WARREN_HARNESS_DIR },
    idleMs: config.BOX_IDLE_S * 1000,
    busyAgents: () => registry.activeAgents(),
    pids: config.BOX_PIDS,
    // boxd hears from its server well within BOX_ORPHAN_S
    keepaliveMs:
      config.BOX_ORPHAN_S > 0 ? Math.max(250, Math.min(10_000, (config.BOX_ORPHAN_S * 1000) / 3)) : 10_000,
  });
  const access = new Access(store.db);
  const secrets = new Secrets(store.db, access, masterKey.key);
  try {
    await secrets.load();
  } catch (err) {
    await store.close();
    if (err instanceof SealError)
      throw new MasterKeyError(
        `the secrets in the database do not open under this master key (${err.message}); start with the key they were sealed under, or rotate with \`warren secrets rotate-key\``,
      );
    throw err;
  }
  held.secrets = secrets;
  const orgs = new Orgs(store.db, access);
  const machines = new Machines(store.db, access, layout, () => runtime);
  const agents: Agents = new Agents({
    db: store.db,
    access,
    machines,
    layout,
    control: () => runtime,
    config,
    checkToolPolicy: (text) => toolPolicyProblem(text),
    cancelGeneration: (agentId): Promise<void> => runs.stopAgent(agentId, "the agent is being deleted"),
    addressRule,
  });
  const agentAt = (machineId: string, uid: number) => agents.atUid(machineId, uid);
  // agents' calls from inside their boxes (warren-secret): each running box keeps a channel
  const agentCalls = new AgentCalls({
    secrets,
    agentAt,
    readHomeFile: (m, a, path, max) => readAgentFile(layout.homeDir(m, a), a, path, max),
    logger,
  });
  runtime.setCallHandler((machineId, call) => agentCalls.handle(machineId, call));
  // connections from agents' commands to the boxes' bridge ports (BOX_BRIDGES): a handler per name
  const bridges = new Bridges(agentAt, logger);
  runtime.setBridgeHandler(bridges.accept);
  const guilds = new Guilds(store.db, access, agents);
  const exec = new Exec(store.db, agents, runtime, layout, metrics, secrets);
  // the agents' way out of their boxes: the `egress` bridge into the filtering proxy
  // the one writer of the records an agent's work leaves, redacted of the agent's secrets
  const records = new Records({
    db: store.db,
    redactorOf: async (agent) => (await secrets.resolve(agent)).redactor,
  });
  const egress = new Egress({
    records,
    db: store.db,
    agents,
    logger,
    runOf: (agentId) => registry.forAgent(agentId)?.runId,
    maxConnections: config.EGRESS_MAX_CONNECTIONS,
    rule: addressRule,
    own,
    ...(opts.egressHosts ? { hosts: opts.egressHosts } : {}),
  });
  bridges.register("egress", egress.handler);
  const tools = new Tools({ db: store.db, runtime, layout, secrets, logger, egress, fetch: connector });
  const terminals = new Terminals({ db: store.db, access, agents, runtime, homes: layout, secrets, logger });

  const ver = await version();
  const caps = new DiskCaps(store.db, layout, config.WORKSPACE_MAX_MIB);
  const staging = new DirRunStaging((machineId) => provider.runFilesDir(machineId));
  // a file of an agent's home by the home rules (scripts of the scripted provider, MEMORY.md)
  const readHome = (agent: { id: string; machineId: string }, p: string, maxBytes: number) =>
    readHomeFile(layout.homeDir(agent.machineId, agent.id), parseHomePath(agent.id, p), { maxBytes });
  const gateway = new Gateway({
    keysOf: (agent) => secrets.keysFor(agent),
    readHome: (agent, p) => readHome(agent, p, 4 * 1024 * 1024),
    prices: new Prices(config.WARREN_MODEL_PRICES),
    fetch: connector,
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
      new HarnessRunner(kind, {
        db: store.db,
        runtime,
        staging,
        homes: layout,
        secrets,
        toolsets: tools,
        hostDir: config.WARREN_HARNESS_DIR,
      }),
    );
  }
  // the operator's system.md template, when there is one (else the built-in one)
  const template = await readFile(path.join(root, "templates", "system.md"), "utf8").catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    return undefined;
  });
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
  const runs: Runs = new Runs({
    records,
    db: store.db,
    access,
    agents,
    runtime,
    registry,
    caps,
    staging,
    homes: layout,
    logger,
    version: ver,
    secrets,
    gateway,
    runners,
  });
  const lost = await runs.markLost();
  if (lost > 0) logger.warn({ runs: lost }, "runs that were going on when the server stopped are now lost");

  const recovered = await runtime.recover();
  if (recovered.adopted.length || recovered.reaped.length) logger.info(recovered, "boxes recovered");
  runtime.startIdleTimer();
  runtime.startHealth(config.BOX_HEALTH_MS);

  // the previews' listener: an agent's ports, each on an origin of its own, never the API's
  const previewGrants = new PreviewGrants();
  const preview = createPreviewServer({
    config,
    access,
    agents,
    forward: (machineId, port) => runtime.forward(machineId, port),
    grants: previewGrants,
    own,
    logger,
  });
  own.addServer(preview);

  const app = await buildApp({
    config,
    access,
    own,
    logger,
    metrics,
    version: ver,
    ready: () => ready,
    degraded,
    routes: [
      ...orgRoutes(orgs),
      ...machineRoutes(machines),
      ...agentRoutes(agents),
      ...guildRoutes(guilds),
      ...execRoutes(exec),
      ...egressRoutes(egress),
      ...terminalRoutes(terminals),
      ...runRoutes(runs),
      ...secretRoutes(secrets),
      ...portRoutes(agents, {
        grants: previewGrants,
        origin: (agentId, port) => {
          const a = preview.address();
          return a && typeof a !== "string" ? previewOrigin(config, a.port, agentId, port) : null;
        },
      }),
      ...homeRoutes(new Homes(store.db, agents, layout, config.WORKSPACE_MAX_MIB)),
    ],
  });
  await app.ready();
  own.addServer(app.server);
  ready = true;

  return {
    app,
    config,
    store,
    provider,
    runtime,
    bridges,
    registry,
    runs,
    tools,
    gateway,
    runners,
    logger,
    own,
    addressRule,
    connector,
    preview,
    async listen(o = {}) {
      const url = await app.listen({
        host: o.host ?? config.WARREN_HOST,
        port: o.port ?? config.WARREN_PORT,
      });
      await new Promise<void>((resolve, reject) => {
        preview.once("error", reject);
        preview.listen(o.previewPort ?? config.WARREN_PREVIEW_PORT, o.host ?? config.WARREN_HOST, () => {
          preview.off("error", reject);
          resolve();
        });
      });
      const a = preview.address();
      const port = a && typeof a !== "string" ? a.port : 0;
      return { url, previewUrl: `http://localhost:${port}` };
    },
    async close(o = {}) {
      ready = false;
      const graceMs = o.graceMs ?? 0;
      terminals.close(); // a terminal does not outlive its server: its viewers are told why
      const requests = app.close(); // stops accepting; in-flight requests finish
      // a preview does not outlive its server either (its requests and WebSockets are cut)
      const previews = new Promise<void>((r) => (preview.listening ? preview.close(() => r()) : r()));
      preview.closeAllConnections();
      if (graceMs > 0 && !(await runs.drain(graceMs)))
        logger.warn({ graceMs }, "runs still going on after the grace period are interrupted");
      await runs.stopAll(
        graceMs > 0
          ? `interrupted: the server stopped (the ${Math.round(graceMs / 1000)} s grace period was over)`
          : "interrupted: the server stopped",
      );
      // a request that still streams (a long exec) does not hold the stop for ever
      await Promise.race([
        Promise.all([requests, previews]),
        new Promise((r) => setTimeout(r, 5000).unref()),
      ]);
      if (o.stopBoxes) await runtime.stopAll("stopped with the server (--stop-boxes)");
      face.close();
      runtime.close();
      await egress.close();
      await store.close();
      releaseLock();
    },
  };
}
