// An http tool: calls under its base URL only, with the methods it lists; its headers carry
// the values of the agent's granted secrets of use tool (read here, in the server, never in
// a box), which never reach the model, the trace or the result (an answer that echoes one
// is redacted). It fetches through the guarded connector (the address rule: no loopback or
// private address outside the operator's bound, never the server's own endpoints) and follows
// no redirect: a redirect is its answer.
import type { ToolSpec } from "../contract/spec.js";
import type { GuardedFetch } from "../net/connector.js";
import { Redactor } from "../secrets/redact.js";
import type { ResolvedSecrets, ToolHeaderValues } from "../secrets/service.js";
import { httpMethod, pathUnder } from "./canonical.js";
import { bodyText, bounded, readBody, str, ToolFailure, type ToolImpl } from "./impl.js";

type HttpSpec = Extract<ToolSpec, { type: "http" }>;

const HTTP_MAX_BYTES = 1024 * 1024;
const HTTP_TIMEOUT_MS = 60_000;

/** The URL of `path` under `base`, or a failure when it would leave it (another origin, `..` above it). */
export function underBase(base: URL, path: string, query: Record<string, unknown> | undefined): URL {
  if (/^[a-z][a-z0-9+.-]*:/i.test(path) || path.startsWith("//"))
    throw new ToolFailure("path must be a path under the tool's base URL, not a URL");
  const basePath = base.pathname.endsWith("/") ? base.pathname : `${base.pathname}/`;
  const [p = "", q] = path.replace(/^\/+/, "").split("?", 2);
  // resolved by the URL rules (`..`, `%2e%2e` and `\\` included), then checked
  const url = new URL(p, `${base.origin}${basePath}`);
  if (url.origin !== base.origin || !(url.pathname === base.pathname || url.pathname.startsWith(basePath)))
    throw new ToolFailure(`the path leaves the tool's base URL ${base.origin}${basePath}`);
  url.search = q !== undefined ? `?${q}` : base.search;
  for (const [k, v] of Object.entries(query ?? {})) {
    if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean")
      throw new ToolFailure(`query.${k} must be a string, a number or a boolean`);
    url.searchParams.append(k, String(v));
  }
  return url;
}

export function httpTool(
  spec: HttpSpec,
  values: ToolHeaderValues,
  secrets: { redactor: Pick<ResolvedSecrets["redactor"], "redactText"> },
  guarded: GuardedFetch,
): ToolImpl {
  const base = new URL(spec.base_url);
  const headers: Record<string, string> = {};
  const missing: string[] = [];
  for (const [header, secret] of Object.entries(spec.headers ?? {})) {
    const value = values[secret]?.value;
    if (value === undefined) missing.push(secret);
    else headers[header] = value;
  }
  // the header values are hidden from the answer even when they are shorter than the store's minimum
  const redactor = new Redactor([...Object.values(headers)]);
  return {
    kind: "http",
    tool: {
      name: spec.name,
      description:
        spec.description ??
        `Calls the HTTP API at ${base.origin}${base.pathname} (methods ${spec.methods.join(", ")}); answers the status and body.`,
      parameters: {
        type: "object",
        properties: {
          method: { type: "string", enum: [...spec.methods] },
          path: { type: "string", description: `the path under ${base.pathname}` },
          query: {
            type: "object",
            description: "query parameters",
            additionalProperties: { type: "string" },
          },
          body: { type: "string", description: "the request body (JSON text for a JSON API)" },
        },
        required: ["method", "path"],
      },
    },
    canonical: { method: httpMethod, path: pathUnder(base, (b, p) => underBase(b, p, undefined)) },
    async run(args, signal) {
      if (missing.length > 0)
        throw new ToolFailure(
          `the secret(s) ${missing.join(", ")} this tool needs are not granted to this agent (as secrets of use tool)`,
        );
      const method = str(args, "method").toUpperCase();
      if (!(spec.methods as string[]).includes(method))
        throw new ToolFailure(`method ${method} is not allowed for this tool (${spec.methods.join(", ")})`);
      const query = args.query;
      if (query !== undefined && (query === null || typeof query !== "object" || Array.isArray(query)))
        throw new ToolFailure("query must be an object");
      const url = underBase(base, str(args, "path"), query as Record<string, unknown> | undefined);
      const body = str(args, "body", { optional: true });
      if (body !== undefined && (method === "GET" || method === "HEAD"))
        throw new ToolFailure(`a ${method} has no body`);
      const sent: Record<string, string> = { ...headers };
      if (body !== undefined && !Object.keys(sent).some((h) => h.toLowerCase() === "content-type"))
        sent["content-type"] = /^\s*[[{]/.test(body) ? "application/json" : "text/plain; charset=utf-8";
      const res = await guarded(url, {
        method,
        headers: sent,
        ...(body !== undefined ? { body } : {}),
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(HTTP_TIMEOUT_MS)]),
      });
      const { body: got, truncated } = await readBody(res, HTTP_MAX_BYTES);
      const type = res.headers.get("content-type") ?? "";
      const location = res.headers.get("location");
      const text = `status ${res.status}${type ? `\ncontent-type: ${type}` : ""}${location ? `\nlocation: ${location}` : ""}${truncated ? `\n(first ${HTTP_MAX_BYTES} bytes)` : ""}\n\n${bodyText(type, got)}`;
      return bounded(secrets.redactor.redactText(redactor.redactText(text)));
    },
  };
}
