// What every service stands on, built in order: the secrets' key, the box provider and the
// boot checks, the store, access and secrets, the log (redacted of every secret value), the
// address rule and the guarded connector.
import type pino from "pino";
import { Access } from "../access/index.js";
import { enforce, runChecks, stateProbes, type Probes } from "../boot/checks.js";
import { createProvider, type BoxProvider } from "../boxes/index.js";
import type { Config } from "../config/index.js";
import type { StatePaths } from "../config/paths.js";
import { createConnector, type ConnectorOptions, type GuardedFetch } from "../net/connector.js";
import { parseOutboundProxy } from "../net/proxy.js";
import { OwnEndpoints } from "../net/own.js";
import { AddressRule } from "../net/rule.js";
import { createLogger, type Logger } from "../observability/log.js";
import { Metrics } from "../observability/metrics.js";
import { startTelemetry, type Telemetry } from "../observability/telemetry.js";
import { SealError } from "../secrets/crypto.js";
import { MasterKeyError, resolveMasterKey } from "../secrets/master-key.js";
import { Secrets } from "../secrets/service.js";
import { openStore, type Store } from "../store/index.js";
import { readPolicy, workspaceProbes } from "../workspaces/boot.js";
import { WorkspaceLayout } from "../workspaces/layout.js";
import type { Policy } from "../workspaces/policy.js";
import { contractsLoadedProbe } from "../flows/contract-files.js";

export interface BaseOptions {
  logger?: Logger | undefined;
  /** Where the server's own logger writes (default stdout); every secret value is redacted from it. */
  logDestination?: pino.DestinationStream | undefined;
  /** Metrics without the process-wide default collectors (many servers in one test process). */
  defaultMetrics?: boolean | undefined;
  /** Replaces boot checks' probes (tests simulate a missing part). */
  probes?: Probes | undefined;
  /** The server's version (OpenTelemetry's service.version). */
  version?: string | undefined;
}

export interface Base {
  config: Config;
  state: StatePaths;
  provider: BoxProvider;
  /** Boot checks that are missing but accepted (WARREN_ALLOW_DEGRADED). */
  degraded: string[];
  store: Store;
  access: Access;
  secrets: Secrets;
  logger: Logger;
  metrics: Metrics;
  /** The server's own listening endpoints and outgoing connections (never reached from a box, never believed). */
  own: OwnEndpoints;
  /** Where the server may connect on an agent's behalf: never its own endpoints, link-local or metadata. */
  addressRule: AddressRule;
  /** The guarded fetch of every server-side fetch on an agent's behalf (http and MCP tools, model APIs). */
  connector: GuardedFetch;
  /** The guarded connector with a deny list above the rule (an organisation's network deny list). */
  connectorWith(deny: NonNullable<ConnectorOptions["deny"]>): GuardedFetch;
  /** The operator's policy file (workspace classes), read once at boot. */
  policy: Policy;
  /** Where agents' and flow instances' workspaces are. */
  workspaceLayout: WorkspaceLayout;
  /** OpenTelemetry's exporters, when an OTLP endpoint is set (stopped last, compose/serve.ts). */
  telemetry: Telemetry;
}

/** The checks that need the store: the policy file, the classes agents name, their workspaces. */
const STORE_CHECKS = new Set(["policy", "workspace_class_exists", "workspaces"]);

/** The boot checks of a configuration: the provider's probes of the host, the state tree's. */
export function bootProbes(
  state: StatePaths,
  provider: BoxProvider,
  extra: Probes = {},
  repair = true,
): Probes {
  return {
    ...provider.hostProbes({ repair }),
    ...stateProbes(state),
    contracts_loaded: contractsLoadedProbe(state.contracts, state.policy),
    ...extra,
  };
}

export async function openBase(config: Config, state: StatePaths, opts: BaseOptions): Promise<Base> {
  // Secrets' key: checked at every start, so a lost or damaged key is found before it is needed.
  const masterKey = await resolveMasterKey(config, state.run);
  // the provider says what it did through the server's logger, made below (it redacts secrets)
  const boxLog: { to?: Logger } = {};
  const provider = createProvider(config, {
    stateRoot: state.root,
    runRoot: state.run,
    workspacesRoot: state.workspaces,
    orphanAfterS: config.BOX_ORPHAN_S,
    logger: {
      info: (m) => boxLog.to?.info(m),
      warn: (m) => boxLog.to?.warn(m),
      error: (m) => boxLog.to?.error(m),
    },
  });
  // what boxes need: refused when missing, unless accepted (WARREN_ALLOW_DEGRADED)
  const checks = await runChecks(bootProbes(state, provider, opts.probes), config.WARREN_ALLOW_DEGRADED);
  const { degraded } = enforce(checks);

  const store = await openStore({ databaseUrl: config.DATABASE_URL, pgliteDir: state.pglite });
  // workspaces: refused like the host's parts, once the store says which classes agents name
  const workspaceLayout = new WorkspaceLayout({
    machineDir: (m) => provider.homes.machineDir(m),
    flowsRoot: state.flows,
  });
  const policyFile = config.WARREN_POLICY ?? state.policy;
  const policy = readPolicy(policyFile, config.WARREN_POLICY !== undefined);
  const given = Object.entries(opts.probes ?? {}).filter(([k]) => STORE_CHECKS.has(k));
  const storeChecks = await runChecks(
    {
      ...workspaceProbes({ policy: { ...policy, file: policyFile }, db: store.db, layout: workspaceLayout }),
      ...Object.fromEntries(given),
    },
    config.WARREN_ALLOW_DEGRADED,
  );
  try {
    degraded.push(...enforce(storeChecks).degraded);
  } catch (err) {
    await store.close();
    throw err;
  }
  checks.push(...storeChecks);
  const access = new Access(store.db);
  const secrets = new Secrets(store.db, access, masterKey.key);
  // the server's log passes through the redaction of every secret value it holds (a logger
  // given by the caller is the caller's to filter)
  const logger =
    opts.logger ??
    createLogger(config.LOG_LEVEL, opts.logDestination, (line) => secrets.logRedactor.redactText(line));
  boxLog.to = logger;
  // which state tree and which key (where it is, never the key): a start from elsewhere
  // that found another tree is seen at once
  logger.info(
    {
      stateRoot: state.root,
      keyFrom: masterKey.source === "env" ? "WARREN_MASTER_KEY" : masterKey.file,
    },
    "state tree and master key",
  );
  if (masterKey.source === "generated")
    logger.warn(
      { file: masterKey.file },
      "generated a development master key; set WARREN_MASTER_KEY (64 hex characters) in production",
    );
  for (const c of checks) {
    if (c.accepted)
      logger.warn(
        { check: c.name, detail: c.detail, fix: c.fix },
        `running degraded: ${c.name} is missing (accepted by WARREN_ALLOW_DEGRADED)`,
      );
    else if (c.ok && /set to/.test(c.detail)) logger.info({ check: c.name }, c.detail);
  }
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

  // what no box and no server-side fetch may reach: the API's listener (and the previews'), a local database
  const own = new OwnEndpoints();
  if (config.DATABASE_URL) {
    const db = new URL(config.DATABASE_URL);
    own.addFixed(db.hostname, Number(db.port || 5432));
  }
  const addressRule = new AddressRule({ bound: config.WARREN_EGRESS_PRIVATE_ALLOW, own });
  // the server's own outbound proxy (validated with the configuration)
  const outbound = config.WARREN_OUTBOUND_PROXY
    ? parseOutboundProxy(config.WARREN_OUTBOUND_PROXY)
    : undefined;
  const proxy = typeof outbound === "string" ? undefined : outbound;
  return {
    config,
    state,
    provider,
    degraded,
    store,
    access,
    secrets,
    logger,
    metrics: new Metrics(opts.defaultMetrics ?? true),
    own,
    addressRule,
    connector: createConnector({ rule: addressRule, own, proxy }),
    connectorWith: (deny) => createConnector({ rule: addressRule, own, deny, proxy }),
    policy: policy.policy,
    workspaceLayout,
    // its spans redacted as the log is
    telemetry: startTelemetry(config, {
      version: opts.version ?? "0.0.0",
      redact: (text) => secrets.logRedactor.redactText(text),
      logger,
    }),
  };
}
