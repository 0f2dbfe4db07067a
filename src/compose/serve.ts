// The server's faces on the network: the API (Fastify, its routes over the services) and
// the previews' listener (an agent's ports, each on an origin of its own, never the API's);
// and the order in which everything starts serving and stops.
import type http from "node:http";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../http/app.js";
import { artifactRoutes } from "../http/routes/artifacts.js";
import { conversationRoutes } from "../http/routes/conversations.js";
import { EventStreams } from "../http/sse.js";
import { closeWhenIdle, StreamBudget, streamLimitsOf } from "../http/streams.js";
import { agentRoutes, guildRoutes } from "../http/routes/agents.js";
import { areaRoutes } from "../http/routes/areas.js";
import { budgetRoutes } from "../http/routes/budgets.js";
import { branchRoutes } from "../http/routes/branches.js";
import { egressRoutes } from "../http/routes/egress.js";
import { execRoutes } from "../http/routes/exec.js";
import { flowRoutes } from "../http/routes/flows.js";
import { mcpRoutes } from "../http/routes/mcp.js";
import { homeRoutes } from "../http/routes/homes.js";
import { machineRoutes } from "../http/routes/machines.js";
import { relocationRoutes } from "../http/routes/relocation.js";
import { Definitions } from "../relocation/definitions.js";
import { Moves } from "../relocation/move.js";
import { environmentRoutes } from "../http/routes/environments.js";
import { orgRoutes } from "../http/routes/orgs.js";
import { nameRoutes } from "../http/routes/names.js";
import { portRoutes } from "../http/routes/ports.js";
import { runRoutes } from "../http/routes/runs.js";
import { scheduleRoutes } from "../http/routes/schedules.js";
import { dispatchRoutes } from "../http/routes/dispatch.js";
import { secretRoutes } from "../http/routes/secrets.js";
import { connectionRoutes } from "../http/routes/connections.js";
import { githubRoutes } from "../http/routes/github.js";
import { signInRoutes } from "../http/routes/signin.js";
import { signInOf } from "../signin/index.js";
import { terminalRoutes } from "../http/routes/terminal.js";
import { browserWatchRoutes } from "../http/routes/browser-watch.js";
import { usageRoutes } from "../http/routes/usage.js";
import { secretRequestRoutes } from "../http/routes/secret-requests.js";
import {
  approvalRoutes,
  evalRoutes,
  evidenceRoutes,
  guardrailRoutes,
  versionRoutes,
} from "../http/routes/versions.js";
import { createPreviewServer, previewOrigin } from "../preview/index.js";
import { UsageRecords } from "../records/usage.js";
import type { Base } from "./base.js";
import type { Services } from "./services.js";

export interface Faces {
  app: FastifyInstance;
  preview: http.Server;
  /** Whether /health answers ready. */
  ready: { now: boolean };
  /** The server-sent event streams being served (ended when the server stops). */
  streams: EventStreams;
}

export async function buildFaces(base: Base, s: Services, version: string): Promise<Faces> {
  const { config, access, own, logger } = base;
  // a move the last server left half-way is finished or rolled back before any request
  const moves = new Moves({
    ...s,
    db: base.store.db,
    layout: base.provider.homes,
    control: s.runtime,
    logger,
  });
  await moves.recover();
  const budget = new StreamBudget(streamLimitsOf(config));
  const preview = createPreviewServer({
    config,
    access,
    agents: s.agents,
    forward: (machineId, port) => s.runtime.forward(machineId, port),
    grants: s.previewGrants,
    own,
    logger,
    streams: {
      acquire: (who) => budget.acquire(who),
      idle: (socket, close) => void closeWhenIdle(socket, budget.limits.idleMs, close),
    },
  });
  own.addServer(preview);
  const ready = { now: false };
  // sessions and personal tokens; in AUTH_MODE=oidc the OpenID client the identity mode uses
  const { sessions, signin } = signInOf(config, base.store.db, base.secrets.sealer);
  const streams = new EventStreams(budget);
  const app = await buildApp({
    config,
    access,
    own,
    logger,
    metrics: base.metrics,
    version,
    ready: () => ready.now,
    degraded: base.degraded,
    streams: budget,
    routes: [
      ...orgRoutes(s.orgs),
      ...nameRoutes(s),
      ...machineRoutes(s.machines),
      ...relocationRoutes(new Definitions({ ...s, db: base.store.db, secrets: base.secrets }), moves),
      ...agentRoutes(s.agents),
      ...environmentRoutes(s.environments),
      ...guildRoutes(s.guilds),
      ...execRoutes(s.exec, budget),
      ...egressRoutes(s.egress),
      ...terminalRoutes(s.terminals),
      ...browserWatchRoutes(s.browserWatches),
      // a run's stream wakes at each stored event of the run, and at its end (the event bus)
      ...runRoutes(s.runs, {
        streams,
        watch: (runId, fn) => {
          const stops = [s.events.on("run.event_stored", fn, runId), s.events.on("run.ended", fn, runId)];
          return () => stops.forEach((stop) => stop());
        },
      }),
      ...conversationRoutes(s.conversations, s.personas, streams),
      ...secretRoutes(base.secrets),
      ...connectionRoutes(s.connections, config.PUBLIC_BASE_URL),
      ...githubRoutes(s.github),
      ...signInRoutes({
        access,
        sessions,
        signin,
        authMode: config.AUTH_MODE,
        publicBaseUrl: config.PUBLIC_BASE_URL,
      }),
      ...portRoutes(s.agents, {
        grants: s.previewGrants,
        origin: (agentId, port) => {
          const a = preview.address();
          return a && typeof a !== "string" ? previewOrigin(config, a.port, agentId, port) : null;
        },
        unfenced: (orgId, who) => access.requireUnfenced(orgId, who),
        revision: (orgId, who) => access.revisionOf(orgId, who.userId),
      }),
      ...homeRoutes(s.homes),
      ...artifactRoutes(s.artifacts),
      ...areaRoutes(s.areas),
      ...branchRoutes(s.conversations),
      ...versionRoutes(s.versions),
      ...approvalRoutes(s.approvals),
      ...evalRoutes(s.evals),
      ...evidenceRoutes(s.evidence),
      ...guardrailRoutes(s.guardrails),
      ...budgetRoutes(s.budgets),
      // what the runs used over time, summed from their receipts in the store
      ...usageRoutes(new UsageRecords(base.store.db, access)),
      ...scheduleRoutes(s.schedules),
      ...secretRequestRoutes(s.approvals, base.secrets),
      ...dispatchRoutes(s.dispatch),
      ...flowRoutes(s.flows),
      // warren as an MCP server (streamable HTTP), its tools calling these same routes as the caller
      ...mcpRoutes({ version, identityHeader: config.TRUSTED_HEADER, streams }),
    ],
  });
  await app.ready();
  own.addServer(app.server);
  return { app, preview, ready, streams };
}

/** Starts the API's listener and the previews'. */
export async function listen(
  base: Base,
  f: Faces,
  o: { host?: string; port?: number; previewPort?: number },
): Promise<{ url: string; previewUrl: string }> {
  const { config } = base;
  const url = await f.app.listen({ host: o.host ?? config.WARREN_HOST, port: o.port ?? config.WARREN_PORT });
  await new Promise<void>((resolve, reject) => {
    f.preview.once("error", reject);
    f.preview.listen(o.previewPort ?? config.WARREN_PREVIEW_PORT, o.host ?? config.WARREN_HOST, () => {
      f.preview.off("error", reject);
      resolve();
    });
  });
  const a = f.preview.address();
  const port = a && typeof a !== "string" ? a.port : 0;
  return { url, previewUrl: `http://localhost:${port}` };
}

/**
 * Stops serving: no new requests, in-flight ones drained; runs going on may finish for
 * `graceMs`, then the rest are cancelled as interrupted. Boxes keep running for the next
 * server to adopt, unless `stopBoxes`.
 */
export async function stop(
  base: Base,
  s: Services,
  f: Faces,
  o: { graceMs?: number | undefined; stopBoxes?: boolean | undefined },
): Promise<void> {
  f.ready.now = false;
  s.firer.stop(); // no schedule fires while the server stops
  await s.retention.stop();
  s.dispatch.stop(); // nor is a guild's message dispatched (it stays queued for the next server)
  const graceMs = o.graceMs ?? 0;
  s.terminals.close(); // a terminal does not outlive its server: its viewers are told why
  s.browserWatches.close(); // nor a browser's watch stream
  s.browsers.close(); // so does a browser
  f.streams.close(); // nor does an event stream: its client takes it up again after the last id it got
  const requests = f.app.close(); // stops accepting; in-flight requests finish
  // a preview does not outlive its server either (its requests and WebSockets are cut)
  const previews = new Promise<void>((r) => (f.preview.listening ? f.preview.close(() => r()) : r()));
  f.preview.closeAllConnections();
  if (graceMs > 0 && !(await s.recorder.drain(graceMs)))
    base.logger.warn({ graceMs }, "runs still going on after the grace period are interrupted");
  // a run waiting for an approval is suspended, not ended: the next server takes it up again
  s.approvals.suspendWaiting();
  await s.recorder.stopAll(
    graceMs > 0
      ? `interrupted: the server stopped (the ${Math.round(graceMs / 1000)} s grace period was over)`
      : "interrupted: the server stopped",
  );
  // a request that still streams (a long exec) does not hold the stop for ever
  await Promise.race([Promise.all([requests, previews]), new Promise((r) => setTimeout(r, 5000).unref())]);
  if (o.stopBoxes) await s.runtime.stopAll("stopped with the server (--stop-boxes)");
  s.face.close();
  s.runtime.close();
  base.provider.close?.();
  await s.egress.close();
  await base.store.close();
  await base.telemetry.stop(); // what is left of the traces and metrics is exported
}
