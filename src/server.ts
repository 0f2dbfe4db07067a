// The composition root: config -> store -> provider -> services -> http.
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { Access } from "./access/index.js";
import { enforce, runChecks, stateProbes, type Probes } from "./boot/checks.js";
import { lockStateRoot } from "./boot/lock.js";
import { Agents } from "./agents/service.js";
import { createProvider, type BoxProvider } from "./boxes/index.js";
import type { Config } from "./config/index.js";
import { Exec } from "./exec/service.js";
import { Guilds } from "./guilds/service.js";
import { buildApp } from "./http/app.js";
import { agentRoutes, guildRoutes } from "./http/routes/agents.js";
import { execRoutes } from "./http/routes/exec.js";
import { homeRoutes } from "./http/routes/homes.js";
import { portRoutes } from "./http/routes/ports.js";
import { runRoutes } from "./http/routes/runs.js";
import { terminalRoutes } from "./http/routes/terminal.js";
import { pageRoutes } from "./http/routes/pages.js";
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

export interface Server {
  app: FastifyInstance;
  config: Config;
  store: Store;
  provider: BoxProvider;
  runtime: MachineRuntime;
  registry: GenerationRegistry;
  runs: Runs;
  logger: Logger;
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

  const store = await openStore({ databaseUrl: config.DATABASE_URL, pgliteDir: paths.pglite });
  let ready = false;
  const metrics = new Metrics(opts.defaultMetrics ?? true);
  const registry = new GenerationRegistry();
  const layout = provider.homes;

  const runtime = new MachineRuntime({
    db: store.db,
    provider,
    logger,
    metrics,
    connect: connectBoxd,
    paths: { data: paths.data, contracts: paths.contracts },
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
  // agents' calls from inside their boxes (warren-secret): each running box keeps a channel
  const agentCalls = new AgentCalls(store.db, secrets, layout, logger);
  runtime.setCallHandler((machineId, call) => agentCalls.handle(machineId, call));
  const orgs = new Orgs(store.db, access);
  const machines = new Machines(store.db, access, layout, () => runtime);
  const agents: Agents = new Agents(
    store.db,
    access,
    machines,
    layout,
    () => runtime,
    config,
    (agentId): Promise<void> => runs.stopAgent(agentId, "the agent is being deleted"),
  );
  const guilds = new Guilds(store.db, access, agents);
  const exec = new Exec(store.db, agents, runtime, layout, metrics, secrets);
  const terminals = new Terminals({ db: store.db, access, agents, runtime, homes: layout, logger });

  const ver = await version();
  const caps = new DiskCaps(store.db, layout, config.WORKSPACE_MAX_MIB);
  const staging = new DirRunStaging((machineId) => provider.runFilesDir(machineId));
  const runs: Runs = new Runs({
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
  });
  const lost = await runs.markLost();
  if (lost > 0) logger.warn({ runs: lost }, "runs that were going on when the server stopped are now lost");

  const recovered = await runtime.recover();
  if (recovered.adopted.length || recovered.reaped.length) logger.info(recovered, "boxes recovered");
  runtime.startIdleTimer();
  runtime.startHealth(config.BOX_HEALTH_MS);

  const app = await buildApp({
    config,
    access,
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
      ...terminalRoutes(terminals),
      // the pages the server serves itself (the operator app takes them over): one place
      ...pageRoutes(),
      ...runRoutes(runs),
      ...secretRoutes(secrets),
      ...portRoutes(agents, runtime),
      ...homeRoutes(new Homes(store.db, agents, layout, config.WORKSPACE_MAX_MIB)),
    ],
  });
  await app.ready();
  ready = true;

  return {
    app,
    config,
    store,
    provider,
    runtime,
    registry,
    runs,
    logger,
    async close(o = {}) {
      ready = false;
      const graceMs = o.graceMs ?? 0;
      terminals.close(); // a terminal does not outlive its server: its viewers are told why
      const requests = app.close(); // stops accepting; in-flight requests finish
      if (graceMs > 0 && !(await runs.drain(graceMs)))
        logger.warn({ graceMs }, "runs still going on after the grace period are interrupted");
      await runs.stopAll(
        graceMs > 0
          ? `interrupted: the server stopped (the ${Math.round(graceMs / 1000)} s grace period was over)`
          : "interrupted: the server stopped",
      );
      // a request that still streams (a long exec) does not hold the stop for ever
      await Promise.race([requests, new Promise((r) => setTimeout(r, 5000).unref())]);
      if (o.stopBoxes) await runtime.stopAll("stopped with the server (--stop-boxes)");
      runtime.close();
      await store.close();
      releaseLock();
    },
  };
}
