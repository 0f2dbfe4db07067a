// Starts a real warren server in-process for a test: its own STATE_ROOT, its own database
// (PGlite or a fresh PostgreSQL database), optionally listening on a free loopback port.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { parseConfig } from "../../src/config/index.js";
import { createServer, type Server } from "../../src/server.js";
import type { DbLeg } from "./db.js";

export interface TestServer {
  server: Server;
  stateRoot: string;
  /** The base URL when started with listen: true. */
  url: string | undefined;
  /** The previews' listener's port when started with listen: true. */
  previewPort: number | undefined;
  inject(opts: InjectOptions): Promise<LightMyRequestResponse>;
  /** JSON request helper: inject and parse. */
  call: (
    method: string,
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function startTestServer(
  opts: {
    leg?: DbLeg;
    env?: Record<string, string>;
    listen?: boolean;
    stateRoot?: string;
    /** Where the server's log goes (default: LOG_LEVEL silent, nowhere). */
    logDestination?: { write(line: string): void };
    /** The egress proxy's hosts table (names of upstreams on this host's loopback). */
    egressHosts?: Record<string, string[]>;
  } = {},
): Promise<TestServer> {
  const stateRoot = opts.stateRoot ?? (await mkdtemp(path.join(os.tmpdir(), "warren-test-")));
  const db = opts.leg ? await opts.leg.fresh() : { url: undefined, drop: async () => {} };
  const config = parseConfig({
    STATE_ROOT: stateRoot,
    LOG_LEVEL: process.env.WARREN_TEST_LOG ?? "silent",
    WARREN_PORT: "0",
    ...(db.url ? { DATABASE_URL: db.url } : {}),
    // the box provider of the run (`WARREN_PROVIDER=oci`: the suites on containers)
    ...Object.fromEntries(
      ["WARREN_PROVIDER", "WARREN_OCI_SOCKET", "WARREN_OCI_IMAGE"].flatMap((k) =>
        process.env[k] ? [[k, process.env[k]]] : [],
      ),
    ),
    ...opts.env,
  });
  let server: Server;
  let url: string | undefined;
  try {
    server = await createServer(config, {
      defaultMetrics: false,
      ...(opts.logDestination ? { logDestination: opts.logDestination } : {}),
      ...(opts.egressHosts ? { egressHosts: opts.egressHosts } : {}),
    });
  } catch (err) {
    await db.drop();
    if (!opts.stateRoot) await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    throw err;
  }
  let previewPort: number | undefined;
  if (opts.listen) {
    const l = await server.listen({ host: "127.0.0.1", port: 0 });
    url = l.url;
    previewPort = Number(new URL(l.previewUrl).port);
  }
  const inject = (o: InjectOptions) => server.app.inject(o);
  return {
    server,
    stateRoot,
    url,
    previewPort,
    inject,
    async call(method, url, body, headers = {}) {
      const r = await inject({
        method: method,
        url,
        ...(body === undefined ? {} : { payload: body as object }),
        headers,
      });
      let parsed: unknown = undefined;
      if (r.body.length > 0) {
        try {
          parsed = r.json();
        } catch {
          parsed = r.body;
        }
      }
      return { status: r.statusCode, body: parsed };
    },
    async close() {
      const boxes = await server.provider.list();
      for (const b of boxes) await server.provider.remove(b.id).catch(() => {});
      await server.close();
      await db.drop();
      if (!opts.stateRoot) await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}
