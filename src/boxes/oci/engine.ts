// A small client of the Docker Engine API over its unix socket (Docker, or Podman's
// compatible service `podman system service`): JSON in, JSON out, one request at a time.
import http from "node:http";
import { WarrenError } from "../../errors.js";
import type { BoxState } from "../types.js";

/** The API version asked for: what Docker 20.10 and Podman 4 both answer. */
const API = "/v1.41";

export interface EngineAnswer {
  status: number;
  body: unknown;
}

export class Engine {
  constructor(readonly socket: string) {}

  /** One request; answers any status (callers decide), throws only when the socket does not answer. */
  request(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<EngineAnswer> {
    const data = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          socketPath: this.socket,
          method,
          path: `${API}${path}`,
          headers: data
            ? { "content-type": "application/json", "content-length": Buffer.byteLength(data) }
            : {},
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : null;
            } catch {
              // plain text (the ping's "OK")
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on("error", (err) =>
        reject(
          new WarrenError(
            "box.unavailable",
            `the container engine at ${this.socket} does not answer (${err.message}); start it with \`scripts/oci.sh service\``,
            undefined,
            { cause: err },
          ),
        ),
      );
      if (data) req.write(data);
      req.end();
    });
  }

  /** The request, refused unless its status is one of `ok`. */
  async expect(method: string, path: string, ok: number[], body?: unknown): Promise<unknown> {
    const r = await this.request(method, path, body);
    if (!ok.includes(r.status)) {
      const message =
        r.body && typeof r.body === "object" && "message" in r.body ? String(r.body.message) : String(r.body);
      throw new WarrenError(
        "box.unavailable",
        `the container engine refused ${method} ${path.split("?")[0]}: ${r.status} ${message}`,
      );
    }
    return r.body;
  }
}

interface ContainerSummary {
  Names?: string[];
  State?: string;
}

export const engineState = (s: string | undefined): BoxState =>
  s === "running" ? "running" : s === "paused" ? "paused" : s === "created" ? "created" : "stopped";

/** The state of each container of the oci provider (its label) the engine holds, by name. */
export async function containerStates(engine: Engine): Promise<Map<string, BoxState>> {
  const filters = JSON.stringify({ label: ["warren.provider=oci"] });
  const found = (await engine.expect(
    "GET",
    `/containers/json?all=true&filters=${encodeURIComponent(filters)}`,
    [200],
  )) as ContainerSummary[];
  const states = new Map<string, BoxState>();
  for (const c of found)
    for (const n of c.Names ?? []) states.set(n.replace(/^\//, ""), engineState(c.State));
  return states;
}
