// One way to declare a route: the contract's zod schemas, which Fastify uses to validate the
// request and to serialise the answer (a field the schema lacks never leaves the server; a
// wrong type is an error, not an answer), and from which the OpenAPI document is generated.
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchemaCompiler,
  FastifySerializerCompiler,
  HTTPMethods,
} from "fastify";
import type { WebSocket } from "ws";
import { z } from "zod";
import type { Identity } from "../access/index.js";
import type { ErrorCode } from "../contract/errors.js";
import { WarrenError } from "../errors.js";
import { withContext } from "../observability/tracing.js";
import { closeWhenIdle, type StreamBudget } from "./streams.js";

export interface RouteContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  who: Identity;
  req: FastifyRequest;
  reply: FastifyReply;
}

export interface RouteSpec<
  P extends z.ZodType,
  Q extends z.ZodType,
  B extends z.ZodType,
  R extends z.ZodType,
> {
  method: HTTPMethods;
  url: string;
  /** The operation's id in the document: `<resource>.<verb>`, e.g. `agents.create`. */
  id: string;
  summary: string;
  tag: string;
  params?: P;
  query?: Q;
  /** A named schema of the contract (`.meta({id})`). */
  body?: B;
  /** The success status (200 unless given). */
  status?: number;
  /** The answer on success: a named schema of the contract. Absent: no JSON body (204, bytes, a stream). */
  response?: R;
  /** What a success answer is when it is not JSON, for the document. */
  produces?: string;
  /** A second form of the answer, chosen by Accept (exec's NDJSON stream): one schema a line. */
  stream?: { type: string; schema: z.ZodType };
  /** Served without an identity, outside /api (health, metrics, the document itself). */
  public?: boolean;
  /** Error codes this route may answer with, for the document. */
  errors?: ErrorCode[];
  /** The body arrives as raw bytes (a Buffer) instead of JSON. */
  rawBody?: boolean;
  /** A body limit of its own, in bytes; past it the route answers 413 with tooLargeCode. */
  bodyLimit?: number;
  /**
   * A WebSocket route (GET): `handler` runs first, on the upgrade request, so that every
   * refusal is an HTTP answer; once upgraded, `websocket` gets the socket and what `handler`
   * answered. A plain GET (no upgrade) answers 400 request.invalid.
   */
  websocket?: (socket: WebSocket, prepared: unknown, req: FastifyRequest) => void;
  handler: (
    ctx: RouteContext<z.output<P>, z.output<Q>, z.output<B>>,
  ) => Promise<z.input<R> | FastifyReply | void>;
}

// A list of routes of any shapes; each keeps its own types where it is declared.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteSpec<any, any, any, any>;

export const route = <
  P extends z.ZodType,
  Q extends z.ZodType,
  B extends z.ZodType,
  R extends z.ZodType = z.ZodVoid,
>(
  spec: RouteSpec<P, Q, B, R>,
): RouteSpec<P, Q, B, R> => spec;

function describeIssue(where: string, issue: z.core.$ZodIssue): string {
  const field = [where, ...issue.path.map(String)].join(".");
  if (issue.code === "unrecognized_keys") return `${field}: unknown field(s) ${issue.keys.join(", ")}`;
  if (issue.code === "invalid_type" && issue.input === undefined) return `${field}: is required`;
  return `${field}: ${issue.message}`;
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const first = r.error.issues.slice(0, 3).map((i) => describeIssue(where, i));
  throw new WarrenError("request.invalid", first.join("; "), { field: first[0] });
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed = (s: string): boolean => !LONE_SURROGATE.test(s);

interface Visit {
  value: unknown;
  parent: Visit | null;
  key: string | number | null;
}

function pathOf(v: Visit): string {
  const parts: string[] = [];
  for (let at: Visit | null = v; at?.parent; at = at.parent)
    parts.push(typeof at.key === "number" ? `[${at.key}]` : `.${String(at.key)}`);
  return `body${parts.reverse().join("")}`;
}

/**
 * Where in a parsed JSON value a string holds a lone surrogate (JSON's "\\ud800"), if
 * anywhere. A walk with its own stack, the path built only for what it finds: a body may
 * nest as deep as JSON.parse allows.
 */
function illFormedAt(root: unknown): string | null {
  const stack: Visit[] = [{ value: root, parent: null, key: null }];
  for (let v = stack.pop(); v; v = stack.pop()) {
    const { value } = v;
    if (typeof value === "string") {
      if (!wellFormed(value)) return pathOf(v);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], parent: v, key: i });
    } else if (typeof value === "object" && value !== null) {
      for (const [k, child] of Object.entries(value)) {
        if (!wellFormed(k)) return `${pathOf(v)} (a name)`;
        stack.push({ value: child, parent: v, key: k });
      }
    }
  }
  return null;
}

/** Decodes a body's bytes as UTF-8; bytes that are not UTF-8 throw. */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * A JSON request body. Bytes that are not UTF-8, and text that is not Unicode (a lone
 * surrogate escaped in JSON), are refused here, once for every route: no store, file or
 * command could take them as is.
 */

export function parseJsonBody(body: string | Buffer): unknown {
  let text: string;
  if (typeof body === "string") text = body;
  else {
    try {
      text = utf8.decode(body);
    } catch {
      throw new WarrenError("request.invalid", "body: is not valid UTF-8 (a JSON body must be UTF-8)");
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw new WarrenError("request.invalid", "body: is not valid JSON");
  }
  const at = illFormedAt(value);
  if (at)
    throw new WarrenError("request.invalid", `${at}: is not valid Unicode (a lone surrogate)`, { field: at });
  return value;
}

function jsonBody(body: unknown): unknown {
  if (Buffer.isBuffer(body)) {
    if (body.length === 0) return undefined;
    return parseJsonBody(body);
  }
  return body;
}

/** Who calls a public route: nobody in particular; such routes read nothing of anyone's. */
const ANONYMOUS: Identity = Object.freeze({ userId: "", email: "" });

const where = { body: "body", querystring: "query", params: "path", headers: "headers" } as const;

const kindOf = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "an array" : `a ${typeof v}`;

/**
 * A body the route's schema sees: an object, or what the schema itself takes; `null`, an array,
 * a number, a string or a boolean sent to a route that takes an object is refused, never read
 * as `{}`.
 */
function objectBody(schema: z.ZodType, value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) return value;
  if (schema.safeParse(value).success) return value;
  throw new WarrenError("request.invalid", `body: must be a JSON object, not ${kindOf(value)}`, {
    field: "body",
  });
}

/**
 * A request body as its route's schema sees it: no body at all (Fastify's null or undefined)
 * is `{}`, for a route whose fields are all optional; a JSON body was judged by
 * `jsonBodyRefused` before; bytes of another content type are parsed and judged here.
 */
function bodyValue(schema: z.ZodType, data: unknown): unknown {
  if (data === null || data === undefined) return {};
  const value = jsonBody(data);
  return value === undefined ? {} : objectBody(schema, value);
}

/** Fastify's validator for a route's zod schemas: the parsed value, or request.invalid naming the field. */
const validatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const part = where[(httpPart ?? "body") as keyof typeof where] ?? "body";
  return (data: unknown) => {
    try {
      const value = part === "body" ? bodyValue(schema, data) : data;
      return { value: parseWith(schema, value, part) };
    } catch (err) {
      return { error: err as Error };
    }
  };
};

const isJson = (type: string | undefined): boolean => /^application\/json\s*(;|$)/i.test(type ?? "");

/**
 * The one rule for JSON bodies, before a route's schema: a body sent as JSON
 * (`content-type: application/json`) to a route that takes an object must be one. An empty
 * body, `null`, an array, a number, a string or a boolean is 400 request.invalid.
 */
const jsonBodyRefused =
  (schema: z.ZodType) =>
  async (req: FastifyRequest): Promise<void> => {
    if (!isJson(req.headers["content-type"])) return;
    if (req.body === undefined)
      throw new WarrenError("request.invalid", "body: is empty; send a JSON object (`{}` for none)", {
        field: "body",
      });
    objectBody(schema, req.body);
  };

/**
 * Fastify's serialiser for a route's answer: what the schema says, nothing more. An answer
 * that does not fit its schema is the server's fault, and an error rather than a leak.
 */
const serializerCompiler: FastifySerializerCompiler<z.ZodType> =
  ({ schema, url, method }) =>
  (data: unknown) => {
    const r = schema.safeParse(data);
    if (r.success) return JSON.stringify(r.data);
    const first = r.error.issues[0];
    throw new WarrenError(
      "internal",
      `the answer of ${method} ${url} does not fit its schema at ${first ? first.path.join(".") || "(root)" : "?"}: ${first?.message ?? ""}`,
    );
  };

/**
 * Registers a WebSocket route (see RouteSpec.websocket). Once the route's own checks pass, the
 * socket takes a slot of the stream budget, or the upgrade is refused with 429
 * stream.too_many before it is accepted; the slot is given back when the connection closes.
 */
function registerWebSocket(
  app: FastifyInstance,
  spec: AnyRoute,
  open: NonNullable<AnyRoute["websocket"]>,
  budget: StreamBudget | undefined,
): void {
  const prepared = new WeakMap<FastifyRequest, unknown>();
  const plain = () =>
    new WarrenError(
      "request.invalid",
      `${spec.url} is a WebSocket: connect with one (Upgrade: websocket), from a page of this server or a client without an Origin`,
    );
  app.route({
    method: "GET",
    url: spec.url,
    schema: {
      ...(spec.params ? { params: spec.params } : {}),
      ...(spec.query ? { querystring: spec.query } : {}),
    },
    preHandler: async (req, reply) => {
      if (!req.ws) throw plain();
      const who = req.identity;
      if (!who) throw new WarrenError("auth.required", "no identity: sign in through the proxy");
      // the handler runs in the request's trace (what it starts nests under the request's span)
      const out = await withContext(req.traceContext ?? undefined, () =>
        spec.handler({
          params: spec.params ? req.params : {},
          query: spec.query ? req.query : {},
          body: undefined,
          who,
          req,
          reply,
        }),
      );
      if (budget) {
        const release = budget.acquire(who);
        req.raw.socket.once("close", release);
      }
      prepared.set(req, out);
    },
    handler: async () => {
      throw plain();
    },
    wsHandler: (socket, req) => {
      // idle for the bound (nothing either way): closed as an idle event stream is
      if (budget)
        closeWhenIdle(req.raw.socket, budget.limits.idleMs, () => {
          socket.close(
            1001,
            `idle: nothing sent either way for ${Math.round(budget.limits.idleMs / 1000)} s`,
          );
          setTimeout(() => socket.terminate(), 5000).unref();
        });
      open(socket, prepared.get(req), req);
    },
  });
}

/** Registers `routes`; WebSockets draw on `streams` (no cap without it). */
export function registerRoutes(app: FastifyInstance, routes: AnyRoute[], streams?: StreamBudget): void {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  for (const spec of routes) {
    if (spec.websocket) {
      registerWebSocket(app, spec, spec.websocket, streams);
      continue;
    }
    const ok = spec.status ?? 200;
    app.route({
      method: spec.method,
      url: spec.url,
      config: {
        rawBody: spec.rawBody === true,
        tooLarge: spec.rawBody ? "file.too_large" : "request.too_large",
      },
      schema: {
        ...(spec.params ? { params: spec.params } : {}),
        ...(spec.query ? { querystring: spec.query } : {}),
        ...(spec.body && !spec.rawBody ? { body: spec.body } : {}),
        ...(spec.response ? { response: { [ok]: spec.response } } : {}),
      },
      ...(spec.bodyLimit ? { bodyLimit: spec.bodyLimit } : {}),
      ...(spec.body && !spec.rawBody ? { preValidation: jsonBodyRefused(spec.body) } : {}),
      handler: async (req, reply) => {
        const who = spec.public ? ANONYMOUS : req.identity;
        if (!who) throw new WarrenError("auth.required", "no identity: sign in through the proxy");
        const body: unknown = spec.rawBody
          ? Buffer.isBuffer(req.body)
            ? req.body
            : Buffer.alloc(0)
          : req.body;
        // the handler runs in the request's trace (what it starts nests under the request's span)
        const out = await withContext(req.traceContext ?? undefined, () =>
          spec.handler({
            params: spec.params ? req.params : {},
            query: spec.query ? req.query : {},
            body,
            who,
            req,
            reply,
          }),
        );
        if (out === reply || reply.sent) return reply;
        reply.code(ok);
        if (out === undefined) return reply.send();
        return reply.send(out);
      },
    });
  }
}
