// The one guarded connector for every fetch the server makes on an agent's behalf (http and MCP
// tools, model APIs, official or at a base_url): a fetch-compatible function over node:http and
// node:https whose connection step is the address rule's. The host is normalised, a name is
// resolved once, every address it resolves to is judged, and the connection goes to exactly the
// address that was checked (the name kept for TLS and the Host header); the socket is tracked as
// the server's own, so the API never believes a request that arrives over it. Redirects are
// followed (when the caller asks fetch to follow them) only through the same check, hop by hop.
import dns from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";
import zlib from "node:zlib";
import type { OwnEndpoints } from "./own.js";
import { tunnel, type OutboundProxy } from "./proxy.js";
import { formatIp, normaliseHost, type AddressRule } from "./rule.js";

/** A fetch the rule refused before anything was sent: the target is an address no agent may reach. */
export class AddressRefused extends Error {
  readonly code = "tool.address_refused";
  constructor(
    readonly target: string,
    readonly reason: string,
  ) {
    super(`${target} was refused: ${reason}`);
    this.name = "AddressRefused";
  }
}

/** The AddressRefused in an error or its causes (the AI SDK and the MCP client wrap what fetch throws). */
export function addressRefusedIn(err: unknown): AddressRefused | null {
  for (let e = err, depth = 0; e && depth < 8; depth++) {
    if (e instanceof AddressRefused) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}

/** A fetch as the standard one is called: what every guarded caller (AI SDK, MCP client) takes. */
export type GuardedFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface ConnectorOptions {
  rule: Pick<AddressRule, "judge">;
  own: Pick<OwnEndpoints, "track">;
  /** A name's addresses (default: the system's resolver, every address). */
  lookup?: (name: string) => Promise<string[]>;
  /** The most redirects one call follows (default 10). */
  maxRedirects?: number;
  /**
   * A deny list above the rule (an organisation's network deny list, read at each hop): of
   * the targets of a hop (the name as written, then each address it resolves to), the first
   * it names and the entry naming it, which refuses the fetch.
   */
  deny?: (targets: DenyTarget[]) => Promise<{ target: DenyTarget; entry: string } | undefined>;
  /** WARREN_OUTBOUND_PROXY: every hop goes through it, tunnelled to the address checked (./proxy.ts). */
  proxy?: OutboundProxy | undefined;
}

/** A target as a deny list sees it: a name, or an address (its text and bytes), and the port. */
export interface DenyTarget {
  host: string;
  port: number;
  ip: number[] | null;
}

/** Headers that stay when a redirect leaves the request's origin; every other one (keys, cookies, secrets) is dropped. */
const CROSS_ORIGIN_KEPT = new Set([
  "accept",
  "accept-encoding",
  "accept-language",
  "content-language",
  "content-type",
  "user-agent",
]);

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Statuses whose answer has no body (a Response refuses one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

const systemLookup = async (name: string): Promise<string[]> =>
  (await dns.lookup(name, { all: true, verbatim: true })).map((a) => a.address);

/** Where one hop connects: the checked address, its port, and the name (for TLS) when it was one. */
interface Target {
  address: string;
  port: number;
  servername: string | undefined;
}

/** Builds the guarded fetch of this rule. */
export function createConnector(o: ConnectorOptions): GuardedFetch {
  const lookup = o.lookup ?? systemLookup;
  const maxRedirects = o.maxRedirects ?? 10;

  /** The address one URL may be fetched at, or AddressRefused: nothing has been sent yet. */
  async function check(url: URL): Promise<Target> {
    const where = `${url.protocol}//${url.host}`;
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new AddressRefused(where, `${url.protocol} is not http or https`);
    const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
    const host = normaliseHost(url.hostname);
    if (!host) throw new AddressRefused(where, `${JSON.stringify(url.hostname)} is not a host name or an IP`);
    let addrs: number[][];
    if (host.kind === "ip") addrs = [host.bytes];
    else {
      let found: string[];
      try {
        found = await lookup(host.name);
      } catch (err) {
        throw new TypeError("fetch failed", {
          cause: new Error(
            `${host.name} does not resolve (${(err as { code?: string }).code ?? "lookup failed"})`,
          ),
        });
      }
      addrs = [];
      for (const a of found) {
        const h = normaliseHost(a.includes(":") ? `[${a.split("%")[0]}]` : a);
        if (h?.kind === "ip") addrs.push(h.bytes);
      }
      if (addrs.length === 0)
        throw new TypeError("fetch failed", { cause: new Error(`${host.name} does not resolve`) });
    }
    // every address a name resolves to: a name that also points inside is refused as a whole
    for (const a of addrs) {
      const v = o.rule.judge(a, port);
      if (!v.ok)
        throw new AddressRefused(
          where,
          host.kind === "name" ? `${host.name} resolves to ${v.reason}` : v.reason,
        );
    }
    if (o.deny) {
      const denied = await o.deny([
        ...(host.kind === "name" ? [{ host: host.name, port, ip: null }] : []),
        ...addrs.map((a) => ({ host: formatIp(a), port, ip: a })),
      ]);
      if (denied)
        throw new AddressRefused(
          where,
          `${denied.target.ip && host.kind === "name" ? `${host.name} resolves to ${denied.target.host}, ` : ""}on the organisation's network deny list (${denied.entry})`,
        );
    }
    const first = addrs[0] ?? [];
    return { address: formatIp(first), port, servername: host.kind === "name" ? host.name : undefined };
  }

  /** One request to the checked address; answers the response as it arrives (its body streams). */
  async function send(
    url: URL,
    target: Target,
    method: string,
    headers: Headers,
    body: Buffer | ReadableStream<Uint8Array> | null,
    signal: AbortSignal | null,
  ): Promise<http.IncomingMessage> {
    const out: Record<string, string> = {};
    headers.forEach((v, k) => {
      if (k !== "host" && k !== "connection" && k !== "content-length" && k !== "transfer-encoding")
        out[k] = v;
    });
    out.host = url.host;
    if (!("accept-encoding" in out)) out["accept-encoding"] = "gzip, deflate, br";
    if (Buffer.isBuffer(body)) out["content-length"] = String(body.length);
    else if (body === null && method !== "GET" && method !== "HEAD") out["content-length"] = "0";
    const secure = url.protocol === "https:";
    // through the server's outbound proxy: a tunnel to the very address the rule judged
    const tunnelled = o.proxy
      ? await tunnel(o.proxy, target, secure, signal).catch((err: unknown) => {
          throw new TypeError("fetch failed", { cause: err });
        })
      : undefined;
    const options: https.RequestOptions = {
      method,
      host: target.address,
      port: target.port,
      path: `${url.pathname}${url.search}`,
      headers: out,
      agent: false,
      ...(secure && target.servername ? { servername: target.servername } : {}),
      ...(tunnelled ? { createConnection: () => tunnelled } : {}),
    };
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(options);
      const onAbort = () =>
        req.destroy(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
      if (signal) {
        if (signal.aborted) return reject(signal.reason as Error);
        signal.addEventListener("abort", onAbort, { once: true });
      }
      req.once("socket", (s) => o.own.track(s));
      if (tunnelled) o.own.track(tunnelled);
      req.once("response", (res) => {
        if (signal) {
          res.once("close", () => signal.removeEventListener("abort", onAbort));
        }
        resolve(res);
      });
      req.once("error", (err) => {
        signal?.removeEventListener("abort", onAbort);
        reject(signal?.aborted ? (signal.reason as Error) : new TypeError("fetch failed", { cause: err }));
      });
      if (body === null) req.end();
      else if (Buffer.isBuffer(body)) req.end(body);
      else {
        const up = Readable.fromWeb(body);
        up.once("error", (err) => req.destroy(err));
        up.pipe(req);
      }
    });
  }

  /** The response of the node answer: decoded as fetch decodes (gzip, deflate, br), streaming. */
  function responseOf(res: http.IncomingMessage, method: string, url: URL, redirected: boolean): Response {
    const status = res.statusCode ?? 0;
    const headers = new Headers();
    for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
      headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
    if (status < 200 || status > 599) {
      res.destroy();
      throw new TypeError("fetch failed", { cause: new Error(`the server answered status ${status}`) });
    }
    let body: ReadableStream<Uint8Array> | null = null;
    if (NULL_BODY.has(status) || method === "HEAD") res.resume();
    else {
      const coding = (headers.get("content-encoding") ?? "").trim().toLowerCase();
      let stream: Readable = res;
      const decoder =
        coding === "gzip" || coding === "x-gzip"
          ? zlib.createGunzip()
          : coding === "deflate"
            ? zlib.createInflate()
            : coding === "br"
              ? zlib.createBrotliDecompress()
              : null;
      if (decoder) {
        res.once("error", (err) => decoder.destroy(err));
        stream = res.pipe(decoder);
      }
      body = Readable.toWeb(stream) as ReadableStream<Uint8Array>;
    }
    const response = new Response(body, { status, statusText: res.statusMessage ?? "", headers });
    Object.defineProperty(response, "url", { value: url.href });
    Object.defineProperty(response, "redirected", { value: redirected });
    return response;
  }

  return async function guardedFetch(input, init) {
    const request = new Request(input, init);
    const signal = init?.signal ?? request.signal;
    const mode = init?.redirect ?? request.redirect;
    let method = request.method.toUpperCase();
    let headers = new Headers(request.headers);
    // a body given whole is kept whole (a redirect that keeps the method sends it again); a stream streams
    const given = init?.body;
    let body: Buffer | ReadableStream<Uint8Array> | null = null;
    if (request.body !== null)
      body = given instanceof ReadableStream ? request.body : Buffer.from(await request.arrayBuffer());
    let url = new URL(request.url);
    for (let hop = 0; ; hop++) {
      if (signal?.aborted) throw signal.reason as Error;
      const target = await check(url);
      const res = await send(url, target, method, headers, body, signal ?? null);
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (!REDIRECTS.has(status) || location === undefined || mode === "manual")
        return responseOf(res, method, url, hop > 0);
      res.resume();
      if (mode === "error")
        throw new TypeError("fetch failed", { cause: new Error(`redirected to ${location}`) });
      if (hop >= maxRedirects)
        throw new TypeError("fetch failed", { cause: new Error(`more than ${maxRedirects} redirects`) });
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new TypeError("fetch failed", { cause: new Error(`a redirect to a bad URL: ${location}`) });
      }
      if (
        (status === 303 && method !== "HEAD") ||
        ((status === 301 || status === 302) && method === "POST")
      ) {
        method = "GET";
        body = null;
        for (const h of ["content-type", "content-length", "content-encoding", "content-language"])
          headers.delete(h);
      } else if (body !== null && !Buffer.isBuffer(body))
        throw new TypeError("fetch failed", {
          cause: new Error("a redirect cannot send a streamed body again"),
        });
      if (next.origin !== url.origin) {
        const kept = new Headers();
        headers.forEach((v, k) => {
          if (CROSS_ORIGIN_KEPT.has(k)) kept.set(k, v);
        });
        headers = kept;
      }
      url = next;
    }
  };
}
