// The bench's HTTP clients for the figures that count them (a warm exec's latency, density,
// throughput) run in a process of their own, as an operator's clients would: the server's
// event loop then carries only the server. `runClients(job)` starts this file with the job
// and reads its answer (JSON on stdout); the job runs here, in the child.
import { spawn } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";

export type Job =
  /** `n` execs of /bin/true as `agent`, one at a time, after `warmup` untimed ones. */
  | { kind: "warm"; url: string; agent: string; n: number; warmup: number }
  /** Every agent's first exec of `true` at once; when each machine's last one returned. */
  | { kind: "density"; url: string; machines: string[][] }
  /** One client per agent, execs back to back for `seconds`. */
  | { kind: "throughput"; url: string; agents: string[]; seconds: number };

export type Answer =
  | { kind: "warm"; ms: number[] }
  | { kind: "density"; perMachineMs: number[]; wallMs: number }
  | { kind: "throughput"; done: number; seconds: number; failures: string[] };

/** Runs `job` in a client process; rejects when it fails (a failed exec included, but for throughput's). */
export function runClients(job: Job): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", fileURLToPath(import.meta.url), JSON.stringify(job)],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (t: string) => (out += t));
    child.stderr.setEncoding("utf8").on("data", (t: string) => (err += t));
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`the bench's clients failed (${code}): ${err.trim()}`));
      try {
        resolve(JSON.parse(out) as Answer);
      } catch {
        reject(new Error(`the bench's clients answered no JSON: ${out.slice(0, 200)}`));
      }
    });
  });
}

/** A keep-alive JSON client of the API: each call's status and parsed body (its text when not JSON). */
export function jsonClient(url: string, maxSockets: number) {
  const base = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const call = (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = http.request(
        {
          host: base.hostname,
          port: base.port,
          path,
          method,
          agent,
          headers: payload
            ? { "content-type": "application/json", "content-length": String(payload.length) }
            : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.once("error", reject);
          res.once("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = undefined;
            if (text) {
              try {
                parsed = JSON.parse(text);
              } catch {
                parsed = text;
              }
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.once("error", reject);
      req.end(payload);
    });
  /** A call that must succeed (2xx): its body, else an error naming the answer. */
  const ok = async (method: string, path: string, body?: unknown): Promise<any> => {
    const r = await call(method, path, body);
    if (r.status < 200 || r.status > 299)
      throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  return { call, ok, close: () => agent.destroy() };
}

function client(url: string, maxSockets: number) {
  const api = jsonClient(url, maxSockets);
  const exec = async (agentId: string, argv: string[]): Promise<void> => {
    const r = await api.call("POST", `/api/agents/${agentId}/exec`, { argv });
    if (r.status !== 200 || r.body?.exit_code !== 0)
      throw new Error(
        `exec ${argv.join(" ")} as ${agentId} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`,
      );
  };
  return { exec, close: api.close };
}

async function run(job: Job): Promise<Answer> {
  switch (job.kind) {
    case "warm": {
      const c = client(job.url, 1);
      try {
        for (let i = 0; i < job.warmup; i++) await c.exec(job.agent, ["/bin/true"]);
        const ms: number[] = [];
        for (let i = 0; i < job.n; i++) {
          const t = performance.now();
          await c.exec(job.agent, ["/bin/true"]);
          ms.push(performance.now() - t);
        }
        return { kind: "warm", ms };
      } finally {
        c.close();
      }
    }
    case "density": {
      const c = client(job.url, 1024);
      try {
        const t0 = performance.now();
        const perMachineMs = await Promise.all(
          job.machines.map(async (agents) => {
            await Promise.all(agents.map((id) => c.exec(id, ["true"])));
            return performance.now() - t0;
          }),
        );
        return { kind: "density", perMachineMs, wallMs: performance.now() - t0 };
      } finally {
        c.close();
      }
    }
    case "throughput": {
      const c = client(job.url, job.agents.length);
      try {
        const t0 = performance.now();
        const end = t0 + job.seconds * 1000;
        let done = 0;
        const failures: string[] = [];
        await Promise.all(
          job.agents.map(async (id) => {
            while (performance.now() < end && failures.length <= 20) {
              try {
                await c.exec(id, ["true"]);
                done++;
              } catch (err) {
                failures.push((err as Error).message);
              }
            }
          }),
        );
        return { kind: "throughput", done, seconds: (performance.now() - t0) / 1000, failures };
      } finally {
        c.close();
      }
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  run(JSON.parse(process.argv[2] ?? "{}") as Job).then(
    (answer) => process.stdout.write(JSON.stringify(answer)),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
