// The composition root: config -> state tree -> base (store, secrets, log, address rule) ->
// services -> the API and the previews. Each step is a module of src/compose.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type http from "node:http";
import type { FastifyInstance } from "fastify";
import { providerMayBeDown, type Probes } from "./boot/checks.js";
import { lockStateRoot } from "./boot/lock.js";
import type { BoxProvider } from "./boxes/index.js";
import { openBase, type BaseOptions } from "./compose/base.js";
import { loadExtensions } from "./compose/extensions.js";
import { buildFaces, listen, stop } from "./compose/serve.js";
import { buildServices, type Services } from "./compose/services.js";
import type { Config } from "./config/index.js";
import { makeStateTree, statePaths } from "./config/paths.js";
import type { GuardedFetch } from "./net/connector.js";
import type { OwnEndpoints } from "./net/own.js";
import type { AddressRule } from "./net/rule.js";
import type { Logger } from "./observability/log.js";
import { recoverLeftovers } from "./runs/parts.js";
import type { Store } from "./store/index.js";

export { bootProbes } from "./compose/base.js";

export type Server = Pick<
  Services,
  | "runtime"
  | "bridges"
  | "registry"
  | "runs"
  | "recorder"
  | "tools"
  | "gateway"
  | "runners"
  | "workloads"
  | "browsers"
  | "firer"
  | "workspaces"
  | "retention"
  | "budgets"
> & {
  app: FastifyInstance;
  config: Config;
  store: Store;
  provider: BoxProvider;
  logger: Logger;
  /** The server's own listening endpoints and outgoing connections (never reached from a box, never believed). */
  own: OwnEndpoints;
  /** The guarded fetch of every server-side fetch on an agent's behalf. */
  connector: GuardedFetch;
  /** Where the server may connect on an agent's behalf (the egress proxy's upstreams, every server-side fetch). */
  addressRule: AddressRule;
  /** The previews' listener (an agent's ports, each on an origin of its own); started by `listen`. */
  preview: http.Server;
  /** Starts the API's listener and the previews' (WARREN_HOST; WARREN_PORT and WARREN_PREVIEW_PORT unless given). */
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
};

export interface ServerOptions extends BaseOptions {
  /** Replaces boot checks' probes (tests simulate a missing part). */
  probes?: Probes;
  /** Names the egress proxy resolves from this table instead of the system's resolver (tests). */
  egressHosts?: Record<string, string[]>;
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
  const state = statePaths(config.STATE_ROOT, config);
  await makeStateTree(state);
  // the extensions' identity modes and providers, before either is chosen
  await loadExtensions(config);
  // one server per STATE_ROOT; released by close() or when the start fails
  const lock = await lockStateRoot(state.root, state.run);
  try {
    const ver = await version();
    const base = await openBase(config, state, { ...opts, version: ver });
    const s = await buildServices(base, { version: ver, egressHosts: opts.egressHosts });
    const lost = await s.recorder.markLost();
    if (lost > 0)
      base.logger.warn({ runs: lost }, "runs that were going on when the server stopped are now lost");
    const expired = await s.approvals.expireOrphans();
    if (expired > 0)
      base.logger.warn({ approvals: expired }, "approvals whose runs the server's stop cut short expired");
    const interrupted = await s.conversations.recover();
    if (interrupted > 0)
      base.logger.warn(
        { turns: interrupted },
        "conversations' turns cut short by the server's stop are interrupted",
      );
    const machineDirs = (await readdir(state.workspaces)).map((n) => path.join(state.workspaces, n));
    // what the lost runs left in their boxes and workspaces, found by label
    const { staging, workspaces } = s;
    await recoverLeftovers({ db: base.store.db, staging, workspaces, machineDirs, logger: base.logger });
    // the operator allowed a start without the provider's parts: its boxes are taken back once it answers
    const recovered = await s.runtime.recover({ later: providerMayBeDown(base.provider, config) });
    if (recovered.adopted.length || recovered.reaped.length) base.logger.info(recovered, "boxes recovered");
    // the runs and turns the last server suspended go on (resume.ts); the ticker, once the rest are lost
    await Promise.all([s.resumer.takeUp(), s.conversations.takeUp()]).then(() => s.firer.start());
    s.retention.start();
    // and the guilds' dispatchers, for messages still queued when the last server stopped
    await s.dispatch.start();
    s.runtime.startIdleTimer();
    s.runtime.startHealth(config.BOX_HEALTH_MS);
    const faces = await buildFaces(base, s, ver);
    faces.ready.now = true;
    return {
      ...s,
      app: faces.app,
      config,
      store: base.store,
      provider: base.provider,
      logger: base.logger,
      own: base.own,
      connector: base.connector,
      addressRule: base.addressRule,
      preview: faces.preview,
      listen: (o = {}) => listen(base, faces, o),
      async close(o = {}) {
        try {
          await stop(base, s, faces, o);
        } finally {
          await lock.release();
        }
      },
    };
  } catch (err) {
    await lock.release();
    throw err;
  }
}
