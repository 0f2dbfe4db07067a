// `warren serve`: parse the environment, compose the server, listen, stop on a signal.
import { BootCheckError, report, runChecks } from "./boot/checks.js";
import { StateLockError } from "./boot/lock.js";
import { createProvider, ociRuntimeReport } from "./boxes/index.js";
import { ExtensionError, loadExtensions } from "./compose/extensions.js";
import { withDotEnv } from "./config/dotenv.js";
import { ConfigError, parseConfig } from "./config/index.js";
import { statePaths } from "./config/paths.js";
import { MasterKeyError, resolveMasterKey } from "./secrets/master-key.js";
import { readNewKey, rotateMasterKey } from "./secrets/rotate.js";
import { openStore } from "./store/index.js";
import { bootProbes, createServer } from "./server.js";

export async function serve(
  given: Record<string, string | undefined> = process.env,
  opts: { stopBoxes?: boolean } = {},
): Promise<void> {
  // the checkout's .env (STATE_ROOT, written by `make up`) under the variables already set
  const env = withDotEnv(given);
  let config;
  try {
    config = parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  let server;
  try {
    server = await createServer(config);
  } catch (err) {
    if (err instanceof MasterKeyError || err instanceof StateLockError || err instanceof ExtensionError) {
      process.stderr.write(`cannot start: ${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof BootCheckError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  let address: string, previewUrl: string;
  try {
    ({ url: address, previewUrl } = await server.listen());
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== "EADDRINUSE" && e.code !== "EADDRNOTAVAIL" && e.code !== "EACCES") throw err;
    process.stderr.write(
      `cannot start: cannot listen on ${config.WARREN_HOST} (WARREN_PORT ${config.WARREN_PORT}, WARREN_PREVIEW_PORT ${config.WARREN_PREVIEW_PORT}): ${e.message}\n`,
    );
    process.exit(2);
  }
  server.logger.info(
    {
      address,
      previews: previewUrl,
      stateRoot: config.STATE_ROOT,
      store: server.store.kind,
      provider: server.provider.name,
    },
    "warren is serving",
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const graceMs = config.WARREN_SHUTDOWN_GRACE_S * 1000;
    server.logger.info(
      { signal, graceS: config.WARREN_SHUTDOWN_GRACE_S, stopBoxes: opts.stopBoxes === true },
      opts.stopBoxes
        ? "stopping: draining requests, letting runs finish, then stopping the boxes"
        : "stopping: draining requests, letting runs finish; boxes keep running for the next start to adopt",
    );
    server.close({ graceMs, stopBoxes: opts.stopBoxes === true }).then(
      () => process.exit(0),
      (err: unknown) => {
        server.logger.error({ err }, "stopping failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

/**
 * `warren secrets rotate-key`: re-seals every secret under a new master key in one
 * transaction. Run it with the server stopped, in the server's environment.
 */
export async function rotateKey(
  env: Record<string, string | undefined>,
  opts: { newKeyFile?: string | undefined },
): Promise<{ secrets: number; file: string | null }> {
  const config = parseConfig(withDotEnv(env));
  const state = statePaths(config.STATE_ROOT);
  const runDir = state.run;
  const current = await resolveMasterKey(config, runDir);
  const newKey =
    opts.newKeyFile !== undefined
      ? await readNewKey(opts.newKeyFile, config.ALLOW_ZERO_MASTER_KEY === true)
      : undefined;
  const store = await openStore({
    databaseUrl: config.DATABASE_URL,
    pgliteDir: state.pglite,
  });
  try {
    return await rotateMasterKey(store.db, current, runDir, newKey);
  } finally {
    await store.close();
  }
}

/**
 * `warren doctor`: the server's boot checks, printed (nothing is started; the state tree
 * of STATE_ROOT is read as the server would). Answers 0 when the server would start.
 */
export async function doctor(
  env: Record<string, string | undefined>,
  out: (text: string) => Promise<void>,
): Promise<number> {
  const config = parseConfig(withDotEnv(env));
  await loadExtensions(config);
  const root = config.STATE_ROOT;
  const provider = createProvider(config, { stateRoot: root, runRoot: statePaths(root).run });
  const results = await runChecks(
    bootProbes(statePaths(root, config), provider, {}, false),
    config.WARREN_ALLOW_DEGRADED,
  );
  await out(`${report(results)}\n`);
  // the oci provider's runtime is its check (oci_runtime); on another, what oci would use
  if (provider.name !== "oci")
    await out(
      `oci runtime (WARREN_PROVIDER=oci): ${await ociRuntimeReport({
        socket: config.WARREN_OCI_SOCKET,
        image: config.WARREN_OCI_IMAGE,
        wanted: config.WARREN_OCI_RUNTIME,
      })}\n`,
    );
  const refused = results.filter((r) => !r.ok && !r.accepted);
  await out(
    refused.length === 0
      ? `warren can start on ${root}\n`
      : `warren would refuse to start: ${refused.map((r) => r.name).join(", ")}\n`,
  );
  return refused.length === 0 ? 0 : 1;
}
