// The OpenAPI 3.1 document, generated from the routes' contract schemas: every named schema
// (`.meta({id})`) becomes a component, every route an operation with its readable id.
import { z } from "zod";
import { ErrorEnvelope } from "../contract/common.js";
import type { AnyRoute } from "./route.js";

type Json = Record<string, unknown>;
type Io = "input" | "output";

const REF = "#/components/schemas/";

/** A schema as JSON Schema, with its named parts lifted out into `defs`. */
function convert(s: z.ZodType, io: Io, defs: Map<string, Json>): Json {
  const {
    $schema: _s,
    $defs,
    ...rest
  } = z.toJSONSchema(s, {
    io,
    unrepresentable: "any",
    target: "draft-2020-12",
  }) as Json & { $defs?: Record<string, Json> };
  for (const [id, def] of Object.entries($defs ?? {})) defs.set(id, def);
  return rest;
}

/** Points `#/$defs/X` references at components, naming input shapes apart where they differ. */
function relink(value: unknown, names: (id: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => relink(v, names));
  if (value && typeof value === "object") {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] =
        k === "$ref" && typeof v === "string" && v.startsWith("#/$defs/")
          ? REF + names(v.slice(8))
          : relink(v, names);
    }
    return out;
  }
  return value;
}

const idOfSchema = (s: z.ZodType): string | undefined => {
  const meta = s.meta() as { id?: unknown } | undefined;
  return typeof meta?.id === "string" ? meta.id : undefined;
};

export const pathOf = (url: string): string => url.replace(/:([A-Za-z_]+)/g, "{$1}").replace(/\*$/, "{path}");

export function openApiDocument(routes: AnyRoute[], info: { title: string; version: string }): object {
  const defs: Record<Io, Map<string, Json>> = { input: new Map(), output: new Map() };
  /** A named schema used in one direction: a reference to its component. */
  const named = (s: z.ZodType, io: Io, what: string): Json => {
    if (!idOfSchema(s)) throw new Error(`${what} is not a named schema of the contract (.meta({id}))`);
    return convert(s, io, defs[io]);
  };

  const ops: { path: string; method: string; op: Json; refs: { io: Io; schema: Json }[] }[] = [];
  for (const r of routes) {
    const refs: { io: Io; schema: Json }[] = [];
    const op: Json = { operationId: r.id, summary: r.summary, tags: [r.tag] };
    const parameters: Json[] = [];
    const pathNames = [...r.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] ?? "");
    const params = r.params
      ? (convert(r.params, "input", defs.input) as { properties?: Record<string, Json> })
      : {};
    for (const n of pathNames)
      parameters.push({
        name: n,
        in: "path",
        required: true,
        schema: params.properties?.[n] ?? { type: "string" },
      });
    if (r.url.endsWith("*"))
      parameters.push({
        name: "path",
        in: "path",
        required: true,
        schema: { type: "string" },
        description: "a path in the home",
      });
    if (r.query) {
      const qs = convert(r.query, "input", defs.input) as {
        properties?: Record<string, Json>;
        required?: string[];
      };
      for (const [n, schema] of Object.entries(qs.properties ?? {})) {
        const { description, ...rest } = schema;
        parameters.push({
          name: n,
          in: "query",
          required: qs.required?.includes(n) ?? false,
          ...(typeof description === "string" ? { description } : {}),
          schema: rest,
        });
      }
    }
    if (parameters.length) op.parameters = parameters;
    if (r.rawBody) {
      op.requestBody = {
        content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
      };
    } else if (r.body) {
      const schema = named(r.body, "input", `the body of ${r.id}`);
      refs.push({ io: "input", schema });
      op.requestBody = { required: true, content: { "application/json": { schema } } };
    }
    const ok: Json = {
      description: r.websocket
        ? "Switching Protocols: a WebSocket; binary frames carry bytes, text frames the JSON messages below"
        : "success",
    };
    if (r.response) {
      const schema = named(r.response, "output", `the answer of ${r.id}`);
      refs.push({ io: "output", schema });
      ok.content = { "application/json": { schema } };
    } else if (r.produces) {
      ok.content = { [r.produces]: { schema: { type: "string" } } };
    }
    if (r.stream) {
      const schema = named(r.stream.schema, "output", `the stream of ${r.id}`);
      refs.push({ io: "output", schema });
      ok.content = { ...(ok.content as Json | undefined), [r.stream.type]: { schema } };
    }
    // an event stream or a WebSocket draws on the stream budget (./streams.ts): 429 past it
    const streamed = r.websocket !== undefined || r.stream?.type === "text/event-stream";
    const codes = [
      ...new Set([
        "request.invalid",
        "auth.required",
        "not_found",
        ...(r.errors ?? []),
        ...(streamed ? ["stream.too_many"] : []),
      ]),
    ];
    op.responses = {
      [String(r.status ?? 200)]: ok,
      default: {
        description: `an error; codes: ${codes.join(", ")}`,
        content: { "application/json": { schema: { $ref: `${REF}Error` } } },
      },
    };
    ops.push({ path: pathOf(r.url), method: r.method.toLowerCase(), op, refs });
  }

  // One component per name; a shape that reads differently as a request gets `<name>Input`.
  const nameFor = (io: Io) => (id: string) => {
    if (io === "output") return id;
    const out = defs.output.get(id);
    const inp = defs.input.get(id);
    return out && inp && JSON.stringify(out) !== JSON.stringify(inp) ? `${id}Input` : id;
  };
  const schemas: Json = {};
  for (const io of ["output", "input"] as const) {
    for (const [id, def] of defs[io]) schemas[nameFor(io)(id)] = relink(def, nameFor(io));
  }
  const envelope = new Map<string, Json>();
  convert(ErrorEnvelope, "output", envelope);
  schemas.Error = envelope.get("Error");

  const paths: Record<string, Json> = {};
  const seen = new Set<string>();
  for (const { path, method, op } of ops) {
    if (seen.has(op.operationId as string))
      throw new Error(`two routes share the operation id ${String(op.operationId)}`);
    seen.add(op.operationId as string);
    (paths[path] ??= {})[method] = op;
  }
  // Operations' own schemas are references ($ref to a $defs name) in the direction they are used.
  for (const { op, refs } of ops) {
    const body = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
    const json = body?.["application/json"];
    if (json) json.schema = relink(json.schema, nameFor("input"));
    const responses = op.responses as Record<string, Json>;
    for (const res of Object.values(responses)) {
      for (const c of Object.values((res.content as Record<string, Json> | undefined) ?? {}))
        if (refs.some((r) => r.io === "output" && r.schema === c.schema))
          c.schema = relink(c.schema, nameFor("output"));
    }
    if (Array.isArray(op.parameters))
      op.parameters = (op.parameters as Json[]).map((p) => relink(p, nameFor("input")) as Json);
  }
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return { openapi: "3.1.0", info, paths, components: { schemas: sorted } };
}
