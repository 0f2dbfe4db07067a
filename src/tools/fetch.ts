// web_fetch's one GET, made through the egress proxy as the agent: the connection is handed to
// the proxy like one of the box's `egress` bridge, so the agent's network policy decides it
// (the allow-list, the rules, never a private address a name resolves to), the proxy connects
// to the address it checked, and the decision is recorded with the agent's other egress.
import http from "node:http";
import https from "node:https";
import { Duplex } from "node:stream";
import tls from "node:tls";
import type { BridgeStreamHandler, BridgeWho } from "../bridges/index.js";
import { AddressRefused } from "../net/connector.js";
import { ToolFailure } from "./impl.js";

/** How a tool reaches the network: the egress bridge's handler, as this agent. */
export interface EgressRoute {
  handler: BridgeStreamHandler;
  who: BridgeWho;
}

/** Two connected streams: what one writes, the other reads. */
function duplexPair(): [Duplex, Duplex] {
  const ends: Duplex[] = [];
  const end = (other: () => Duplex | undefined) =>
    new Duplex({
      read() {},
      write(chunk: Buffer, _enc, cb) {
        other()?.push(chunk);
        cb();
      },
      final(cb) {
        other()?.push(null);
        cb();
      },
      destroy(err, cb) {
        const o = other();
        if (o && !o.destroyed) o.destroy();
        cb(err);
      },
    });
  ends.push(
    end(() => ends[1]),
    end(() => ends[0]),
  );
  return [ends[0]!, ends[1]!];
}

/** A new connection to the proxy, as the agent. */
function connect(route: EgressRoute): Duplex {
  const [mine, theirs] = duplexPair();
  route.handler(theirs, route.who);
  return mine;
}

export interface FetchAnswer {
  status: number;
  contentType: string;
  location: string | null;
  body: Buffer;
  truncated: boolean;
}

/** The proxy's refusal as the tool's failure: an address the rule refuses is `tool.address_refused`. */
function refusedBy(res: http.IncomingMessage, body: string, url: URL): Error | null {
  if (res.headers["x-warren-egress"] !== "refused") return null;
  const reason = body.trim().replace(/^warren egress: refused: /, "");
  if (res.headers["x-warren-egress-rule"] === "address")
    return new AddressRefused(`${url.protocol}//${url.host}`, reason);
  return new ToolFailure(`the network policy refused it: ${reason}`);
}

function readAll(res: http.IncomingMessage, max: number): Promise<{ body: Buffer; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const done = (truncated: boolean) => {
      if (settled) return;
      settled = true;
      resolve({ body: Buffer.concat(chunks, length), truncated });
    };
    res.on("data", (c: Buffer) => {
      if (settled) return;
      const room = max - length;
      if (c.length > room) {
        chunks.push(c.subarray(0, room));
        length = max;
        done(true);
        res.destroy();
        return;
      }
      chunks.push(c);
      length += c.length;
    });
    res.on("end", () => done(false));
    res.on("error", (err) => {
      if (!settled) reject(err);
    });
  });
}

/** A TLS connection to the URL's host through a CONNECT tunnel of the proxy. */
function tunnel(url: URL, route: EgressRoute, signal: AbortSignal): Promise<tls.TLSSocket> {
  const port = url.port === "" ? 443 : Number(url.port);
  const host = url.hostname;
  return new Promise((resolve, reject) => {
    const req = http.request({
      method: "CONNECT",
      path: `${host}:${port}`,
      headers: { host: `${host}:${port}` },
      createConnection: () => connect(route),
      signal,
    });
    req.on("connect", (res, socket, head) => {
      if (res.statusCode !== 200) {
        let text = head.toString("utf8");
        const fail = () =>
          reject(
            refusedBy(res, text, url) ??
              new ToolFailure(`the proxy answered ${res.statusCode}: ${text.trim()}`),
          );
        socket.on("data", (c: Buffer) => (text += c.toString("utf8")));
        socket.once("end", fail);
        socket.once("close", fail);
        socket.once("error", fail);
        return;
      }
      const bare = host.startsWith("[") ? host.slice(1, -1) : host;
      const secure = tls.connect({ socket, servername: /^[\d.]+$|:/.test(bare) ? undefined : bare });
      secure.once("secureConnect", () => resolve(secure));
      secure.once("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** GETs the URL through the egress proxy (no redirect followed), reading at most `maxBytes` of its body. */
export async function getOnce(
  url: URL,
  maxBytes: number,
  signal: AbortSignal,
  route: EgressRoute,
): Promise<FetchAnswer> {
  const headers = { accept: "*/*", "user-agent": "warren-web-fetch", host: url.host };
  let req: http.ClientRequest;
  if (url.protocol === "https:") {
    const secure = await tunnel(url, route, signal);
    req = https.request({
      method: "GET",
      path: `${url.pathname}${url.search}`,
      headers,
      createConnection: () => secure,
      signal,
    });
  } else {
    // a forward proxy's plain request: the absolute URL
    req = http.request({
      method: "GET",
      path: url.href,
      headers,
      createConnection: () => connect(route),
      signal,
    });
  }
  return new Promise((resolve, reject) => {
    req.on("response", (res) => {
      readAll(res, maxBytes).then(({ body, truncated }) => {
        const refused = refusedBy(res, body.toString("utf8"), url);
        if (refused) return reject(refused);
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers["content-type"] ?? ""),
          location: typeof res.headers.location === "string" ? res.headers.location : null,
          body,
          truncated,
        });
      }, reject);
    });
    req.on("error", reject);
    req.end();
  });
}
