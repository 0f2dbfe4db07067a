// One way to declare a route: zod schemas that validate the request and, from the same
// objects, the OpenAPI document served at /api/openapi.json.
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from "fastify";
import { z } from "zod";
import type { Identity } from "../access/index.js";
import { WarrenError } from "../errors.js";

export interface RouteContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  who: Identity;
  req: FastifyRequest;
  reply: FastifyReply;
}

export interface RouteSpec<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> {
  method: HTTPMethods;
  url: string;
  summary: string;
  tag: string;
  params?: P;
  query?: Q;
  body?: B;
  /** The success status (200 unless given). */
  status?: number;
  response?: z.ZodType;
  /** Error codes this route may answer with, for the document. */
  errors?: string[];
  /** The body arrives as raw bytes (a Buffer) instead of JSON. */
  rawBody?: boolean;
  /** A body limit of its own, in bytes; past it the route answers 413 with tooLargeCode. */
  bodyLimit?: number;
  handler: (ctx: RouteContext<z.output<P>, z.output<Q>, z.output<B>>) => Promise<unknown>;
}

// A list of routes of any shapes; each keeps its own types where it is declared.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteSpec<any, any, any>;

export const route = <P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(
  spec: RouteSpec<P, Q, B>,
): RouteSpec<P, Q, B> => spec;

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

/**
 * A JSON request body. Text that is not Unicode (a lone surrogate escaped in JSON) is
 * refused here, once for every route: no store, file or command could take it as is.
 */
export function parseJsonBody(text: string): unknown {
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
    return parseJsonBody(body.toString("utf8"));
  }
  return body;
}

export function registerRoutes(app: FastifyInstance, routes: AnyRoute[]): void {
  for (const spec of routes) {
    app.route({
      method: spec.method,
      url: spec.url,
      config: {
        rawBody: spec.rawBody === true,
        tooLarge: spec.rawBody ? "file.too_large" : "request.too_large",
      },
      ...(spec.bodyLimit ? { bodyLimit: spec.bodyLimit } : {}),
      handler: async (req, reply) => {
        const params = spec.params ? parseWith(spec.params, req.params, "path") : {};
        const query = spec.query ? parseWith(spec.query, req.query, "query") : {};
        let body: unknown = undefined;
        if (spec.rawBody) body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        else if (spec.body) body = parseWith(spec.body, jsonBody(req.body) ?? {}, "body");
        const who = req.identity;
        if (!who) throw new WarrenError("auth.required", "no identity: sign in through the proxy");
        const out = await spec.handler({ params, query, body, who, req, reply });
        if (out === reply || reply.sent) return reply;
        reply.code(spec.status ?? 200);
        if (out === undefined) return reply.send();
        return reply.send(out);
      },
    });
  }
}

const toSchema = (s: z.ZodType, io: "input" | "output") => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return rest;
};

const errorEnvelope = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: { code: { type: "string" }, message: { type: "string" } },
    },
  },
};

export function openApiDocument(routes: AnyRoute[], info: { title: string; version: string }): object {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const p = r.url.replace(/:([A-Za-z_]+)/g, "{$1}").replace(/\*$/, "{path}");
    const op: Record<string, unknown> = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method}_${p}`,
    };
    const parameters: unknown[] = [];
    const names = [...r.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]);
    if (r.url.endsWith("*")) names.push("path");
    for (const n of names)
      parameters.push({ name: n, in: "path", required: true, schema: { type: "string" } });
    if (r.query) {
      const qs = toSchema(r.query, "input") as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(qs.properties ?? {})) {
        parameters.push({ name, in: "query", required: qs.required?.includes(name) ?? false, schema });
      }
    }
    if (parameters.length) op.parameters = parameters;
    if (r.rawBody) {
      op.requestBody = {
        content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
      };
    } else if (r.body) {
      op.requestBody = {
        required: true,
        content: { "application/json": { schema: toSchema(r.body, "input") } },
      };
    }
    const ok: Record<string, unknown> = { description: "success" };
    if (r.response) ok.content = { "application/json": { schema: toSchema(r.response, "output") } };
    const responses: Record<string, unknown> = { [String(r.status ?? 200)]: ok };
    responses.default = {
      description: `an error; codes: ${["request.invalid", "auth.required", "not_found", ...(r.errors ?? [])].join(", ")}`,
      content: { "application/json": { schema: errorEnvelope } },
    };
    op.responses = responses;
    (paths[p] ??= {})[r.method.toLowerCase()] = op;
  }
  return { openapi: "3.1.0", info, paths };
}
