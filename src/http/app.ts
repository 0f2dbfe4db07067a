// The Fastify app: hooks (host, origin, identity), the error envelope in one place, metrics,
// the OpenAPI document, and the routes by resource.
import fastifyWebsocket from "@fastify/websocket";
import Fastify, {
  LogController,
  type FastifyReply,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyError,
} from "fastify";
import type { Access, Identity } from "../access/index.js";
import type { Config } from "../config/index.js";
import { errorStatus, type ErrorCode } from "../contract/errors.js";
import { WarrenError } from "../errors.js";
import type { Logger } from "../observability/log.js";
import type { Metrics } from "../observability/metrics.js";
import {
  endRequestSpan,
  requestSpan,
  tracing,
  type Span,
  type TraceContext,
} from "../observability/tracing.js";
import type { OwnEndpoints } from "../net/own.js";
import { hostAllowed, isStateChange, originAllowed } from "./guards.js";
import { makeIdentityMode } from "./identity.js";
import { openApiDocument } from "./openapi.js";
import { DEFAULT_WEB_ROOT, isAppPath, webAsset } from "./web.js";
import { parseJsonBody, registerRoutes, route, type AnyRoute } from "./route.js";
import type { StreamBudget } from "./streams.js";
import type { z } from "zod";
import { Health, OpenApiDocument } from "../contract/homes.js";
import { TERMINAL_MAX_MESSAGE_BYTES } from "../contract/terminal.js";

declare module "fastify" {
  interface FastifyRequest {
    identity: Identity | null;
    startedAt: bigint;
    /** The request's span and the context its handler runs in (OpenTelemetry, when on). */
    span: Span | null;
    traceContext: TraceContext | null;
  }
  interface FastifyContextConfig {
    rawBody?: boolean;
    /** The code a 413 of this route answers with. */
    tooLarge?: ErrorCode;
  }
}

export interface AppOptions {
  config: Pick<
    Config,
    "AUTH_MODE" | "TRUSTED_HEADER" | "PUBLIC_BASE_URL" | "WARREN_TRUSTED_PROXIES" | "extraEnv"
  >;
  access: Access;
  /** The server's own outgoing connections: a request over one of them has no identity, in any mode. */
  own: OwnEndpoints;
  logger: Logger;
  metrics: Metrics;
  routes: AnyRoute[];
  /** The budget of open event streams and WebSockets (./streams.ts). */
  streams: StreamBudget;
  /** Answers /health: true once the store and the provider are ready. */
  ready: () => boolean;
  /** Boot checks that failed and were accepted (WARREN_ALLOW_DEGRADED): /health names them. */
  degraded?: string[];
  version: string;
  /** The built operator app (default dist/web), served at / for every path outside /api. */
  webRoot?: string;
}

/** Maps an error Fastify raised itself (bad JSON, too large, ...) to a stable code. */
function frameworkCode(err: FastifyError, tooLarge: ErrorCode | undefined): ErrorCode {
  const status = err.statusCode ?? 500;
  if (status === 413) return tooLarge ?? "request.too_large";
  if (status === 415) return "unsupported_media_type";
  if (status === 404) return "not_found";
  if (status >= 400 && status < 500) return "request.invalid";
  return "internal";
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { config, access, metrics } = opts;
  const identityMode = await makeIdentityMode(config.AUTH_MODE, { env: config.extraEnv ?? {}, config });
  const baseLogger: FastifyBaseLogger = opts.logger;
  const app = Fastify({
    loggerInstance: baseLogger,
    bodyLimit: 1024 * 1024,
    trustProxy: false,
    // Fastify's own request lines carry whole URLs (queries included); warren logs one line
    // per request itself, with the route pattern only (onResponse below).
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors: (err, req, reply) => {
      metrics.errors.inc({ code: "request.invalid" });
      const what =
        err.code === "FST_ERR_MAX_PARAM_LENGTH" ? "a path segment is too long" : "the URL is malformed";
      void (reply as unknown as FastifyReply)
        .code(400)
        .send({ error: { code: "request.invalid", message: `path: ${what}` } });
      req.log.debug({ code: err.code }, "refused a malformed URL");
    },
    routerOptions: { maxParamLength: 8192 },
  });

  // WebSocket routes (the terminal): a message above the limit closes the socket (1009).
  // Registered before the hooks below, so that an upgrade they refuse is still known as
  // one and its socket is closed after the answer.
  await app.register(fastifyWebsocket, { options: { maxPayload: TERMINAL_MAX_MESSAGE_BYTES } });

  app.decorateRequest("identity", null);
  app.decorateRequest("startedAt", 0n);
  app.decorateRequest("span", null);
  app.decorateRequest("traceContext", null);

  // Bodies that are not JSON arrive as bytes; JSON routes parse them and say so when they are not JSON.
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (req, body: Buffer, done) => {
    if (req.routeOptions.config.rawBody) return done(null, body);
    if (body.length === 0) return done(null, undefined);
    try {
      done(null, parseJsonBody(body));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  app.addHook("onRequest", async (req) => {
    req.startedAt = process.hrtime.bigint();
    if (tracing.on) {
      // the route's pattern, never the path or its query (ids and tokens stay out of the trace)
      const route = req.routeOptions.url ?? "unmatched";
      const { span, ctx } = requestSpan(
        `${req.method} ${route}`,
        { "http.request.method": req.method, "http.route": route },
        req.headers,
      );
      req.span = span;
      req.traceContext = ctx;
    }
    const host = req.headers.host;
    if (!hostAllowed(host, config.PUBLIC_BASE_URL)) {
      throw new WarrenError(
        "host.refused",
        "this server answers only for loopback hosts or PUBLIC_BASE_URL's host",
      );
    }
    const upgrade = (req.headers.upgrade ?? "").toLowerCase() === "websocket";
    if (
      (upgrade || isStateChange(req.method)) &&
      !originAllowed(req.headers.origin, host, config.PUBLIC_BASE_URL)
    ) {
      throw new WarrenError(
        "origin.refused",
        "a change or a WebSocket is accepted only from a page of this server",
      );
    }
    // the server talking to itself (its egress proxy's or a server-side fetch's upstream
    // side): whatever the request carries, it is nobody, in every mode
    if (opts.own.isOwnConnection(req.socket.remoteAddress, req.socket.remotePort)) {
      throw new WarrenError(
        "auth.required",
        "a request over a connection this server opened itself has no identity",
      );
    }
    const url = req.url;
    const path = url.split("?")[0] ?? url;
    const identified =
      (path.startsWith("/api/") && path !== "/api/openapi.json") || path === "/metrics" || path === "/mcp";
    if (!identified) return;
    // the identity mode AUTH_MODE names (./identity.ts: built in, or an extension's)
    const email = await identityMode.identify({
      method: req.method,
      url: req.url,
      headers: req.headers,
      remoteAddress: req.socket.remoteAddress,
    });
    req.identity = await access.identify(email);
  });

  app.addHook("onResponse", async (req, reply) => {
    const route = req.routeOptions.url ?? "unmatched";
    metrics.requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    const seconds = Number(process.hrtime.bigint() - req.startedAt) / 1e9;
    metrics.latency.observe({ method: req.method, route }, seconds);
    if (req.span) endRequestSpan(req.span, reply.statusCode);
    req.log.info(
      { method: req.method, route, status: reply.statusCode, ms: Math.round(seconds * 1e4) / 10 },
      "request",
    );
  });

  app.setErrorHandler(async (err: unknown, req, reply) => {
    let code: ErrorCode;
    let message: string;
    // a conflicting land names its files in the envelope: {error: {code, message, files}}
    let extra: { files?: unknown; candidates?: unknown; over?: unknown; problem?: unknown } = {};
    if (err instanceof WarrenError) {
      code = err.code;
      message = err.message;
      if (code === "branch.conflict") extra = { files: err.details?.files ?? [] };
      // an ambiguous name lists what it could mean: {error: {code, message, candidates}}
      if (code === "name.ambiguous") extra = { candidates: err.details?.candidates ?? [] };
      // a spec over its permission bundle names what is over: {error: {code, message, over}}
      if (code === "bundle.exceeded") extra = { over: err.details?.over };
      // a contract that does not hold names its file and line: {error: {code, message, problem}}
      if (code === "contract.invalid") extra = { problem: err.details?.problem };
    } else if (
      err &&
      typeof err === "object" &&
      "statusCode" in err &&
      typeof (err as FastifyError).statusCode === "number"
    ) {
      const fe = err as FastifyError;
      code = frameworkCode(fe, req.routeOptions.config.tooLarge);
      message = code === "internal" ? "internal error" : fe.message;
    } else {
      code = "internal";
      message = "internal error; the server log has the details";
    }
    const status = errorStatus[code];
    // a refusal that passes (stream.too_many) says when to try again
    const retryAfterS = err instanceof WarrenError ? err.details?.retryAfterS : undefined;
    if (typeof retryAfterS === "number") void reply.header("retry-after", String(Math.ceil(retryAfterS)));
    if (status >= 500) req.log.error({ err, code, route: req.routeOptions.url }, "request failed");
    metrics.errors.inc({ code });
    return reply.code(status).send({ error: { code, message, ...extra } });
  });

  const webRoot = opts.webRoot ?? DEFAULT_WEB_ROOT;
  app.setNotFoundHandler(async (req, reply) => {
    if ((req.method === "GET" || req.method === "HEAD") && isAppPath(req.url)) {
      const asset = await webAsset(webRoot, req.url);
      if (asset) {
        return reply
          .code(200)
          .type(asset.type)
          .header("cache-control", asset.cache)
          .header("x-content-type-options", "nosniff")
          .send(asset.body);
      }
    }
    metrics.errors.inc({ code: "not_found" });
    return reply
      .code(404)
      .send({ error: { code: "not_found", message: `no route for ${req.method} ${req.url.split("?")[0]}` } });
  });

  const all: AnyRoute[] = [...systemRoutes(opts, () => doc), ...opts.routes];
  const doc = openApiDocument(all, { title: "warren", version: opts.version });
  registerRoutes(app, all, opts.streams);
  return app;
}

/** The server's own routes: readiness, metrics and this document. */
function systemRoutes(opts: AppOptions, doc: () => object): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/health",
      id: "system.health",
      tag: "system",
      summary:
        "200 {ok: true} once the store and the provider are ready (with `degraded`: the accepted missing parts); 503 {ok: false} before",
      public: true,
      response: Health,
      handler: async ({ reply }) => {
        if (!opts.ready()) return reply.code(503).send({ ok: false });
        return opts.degraded?.length ? { ok: true, degraded: opts.degraded } : { ok: true };
      },
    }),
    route({
      method: "GET",
      url: "/metrics",
      id: "system.metrics",
      tag: "system",
      summary:
        "Prometheus metrics of this server; series of a machine or organisation only for the organisations the caller belongs to",
      produces: "text/plain",
      errors: ["auth.required"],
      handler: async ({ who, reply }) => {
        const mine = new Set(await opts.access.orgIdsOf(who));
        reply.header("content-type", opts.metrics.registry.contentType);
        return reply.send(onlyOrgs(await opts.metrics.registry.metrics(), mine));
      },
    }),
    route({
      method: "GET",
      url: "/api/openapi.json",
      id: "system.openapi",
      tag: "system",
      summary: "This document: every route, generated from the same schemas that check them",
      public: true,
      response: OpenApiDocument,
      handler: async () => doc() as z.input<typeof OpenApiDocument>,
    }),
  ];
}

/**
 * The metrics text without the series of other organisations: a sample labelled with an
 * `org` is kept only for the caller's organisations, and one labelled with a `machine` but
 * no `org` is never shown.
 */
export function onlyOrgs(text: string, orgs: Set<string>): string {
  return text
    .split("\n")
    .filter((line) => {
      if (line.startsWith("#")) return true;
      const labels = /^[^{\s]+\{(.*)\}\s/.exec(line)?.[1];
      if (labels === undefined) return true;
      const org = /(?:^|,)org="([^"\\]*)"/.exec(labels)?.[1];
      if (org !== undefined) return orgs.has(org);
      return !/(?:^|,)machine="/.test(labels);
    })
    .join("\n");
}
