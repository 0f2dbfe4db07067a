// The egress proxy against a direct connection to the same loopback server: the added
// latency of one plain HTTP request (p50, keep-alive to the proxy or to the server) and
// the throughput of one CONNECT tunnel. The same Python client runs on the host (direct)
// and in a box as an agent (through boxd's bridge and the proxy). Run alone:
// node --import tsx bench/egress.ts
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { BOX_BRIDGES } from "../src/boxes/index.js";
import { startTestServer } from "../test/support/server.js";
import { fmt, summarize, table, type Sample } from "./stats.js";

export interface EgressBench {
  direct: Sample;
  proxied: Sample;
  requests: number;
  tunnelBytes: number;
  directMBps: number[];
  tunnelMBps: number[];
}

const CLIENT = `
import json, socket, sys, time
mode, port, n, nbytes, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
target = ("127.0.0.1", ${BOX_BRIDGES.egress}) if mode.startswith("proxy") else ("127.0.0.1", port)
out = {"ms": [], "mbps": []}
def read_head(s):
    data = b""
    while b"\\r\\n\\r\\n" not in data:
        d = s.recv(65536)
        if not d: raise SystemExit("closed: " + repr(data))
        data += d
    head, _, rest = data.partition(b"\\r\\n\\r\\n")
    return head, rest
s = socket.create_connection(target)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
url = "http://bench.test:%d/" % port if mode.startswith("proxy") else "/"
req = ("GET %s HTTP/1.1\\r\\nHost: bench.test:%d\\r\\n\\r\\n" % (url, port)).encode()
for i in range(n + 20):
    t = time.perf_counter()
    s.sendall(req)
    head, rest = read_head(s)
    length = int([l.split(b":")[1] for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < length: rest += s.recv(65536)
    if i >= 20: out["ms"].append((time.perf_counter() - t) * 1000)
s.close()
buf = bytearray(1 << 20)
view = memoryview(buf)
for r in range(runs):
    s = socket.create_connection(target if mode.startswith("proxy") else ("127.0.0.1", port + 1))
    if mode.startswith("proxy"):
        s.sendall(("CONNECT bench.test:%d HTTP/1.1\\r\\nHost: bench.test:%d\\r\\n\\r\\n" % (port + 1, port + 1)).encode())
        head, rest = read_head(s)
        if not head.startswith(b"HTTP/1.1 200"): raise SystemExit(head.decode())
    t = time.perf_counter()
    s.sendall(b"go\\n")
    got = 0
    while got < nbytes:
        k = s.recv_into(view)
        if k == 0: break
        got += k
    sec = time.perf_counter() - t
    if got != nbytes: raise SystemExit("short stream: %d of %d" % (got, nbytes))
    out["mbps"].append(nbytes / 1e6 / sec)
    s.close()
print(json.dumps(out))
`;

/** An HTTP server answering "ok", and next to it (port + 1) a TCP server streaming `bytes` after "go\n". */
async function upstream(bytes: number): Promise<{ port: number; close(): Promise<void> }> {
  const chunk = Buffer.alloc(1 << 20, 0x61);
  for (let attempt = 0; ; attempt++) {
    const web = http.createServer((_req, res) => res.end("ok"));
    web.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
    const port = (web.address() as AddressInfo).port;
    const stream = net.createServer((sock) => {
      sock.once("data", () => {
        let left = bytes;
        const pump = () => {
          while (left > 0) {
            const n = Math.min(left, chunk.length);
            left -= n;
            if (!sock.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
              return void sock.once("drain", pump);
          }
          sock.end();
        };
        pump();
      });
      sock.on("error", () => sock.destroy());
    });
    const ok = await new Promise<boolean>((r) => {
      stream.once("error", () => r(false));
      stream.listen(port + 1, "127.0.0.1", () => r(true));
    });
    if (ok)
      return {
        port,
        close: async () => {
          web.closeAllConnections();
          await new Promise((r) => web.close(r));
          await new Promise((r) => stream.close(r));
        },
      };
    await new Promise((r) => web.close(r));
    if (attempt > 20) throw new Error("no two free ports next to each other");
  }
}

interface ClientOut {
  ms: number[];
  mbps: number[];
}

export async function benchEgress(
  opts: { requests?: number; megabytes?: number; runs?: number; log?: (s: string) => void } = {},
): Promise<EgressBench> {
  const n = opts.requests ?? 1000;
  const bytes = (opts.megabytes ?? 1024) * 1e6;
  const runs = opts.runs ?? 5;
  const log = opts.log ?? (() => {});
  const up = await upstream(bytes);
  // the upstreams listen on this host's loopback: inside the operator's bound, as a local service would be
  const t = await startTestServer({
    env: { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${up.port},127.0.0.1:${up.port + 1}` },
    egressHosts: { "bench.test": ["127.0.0.1"] },
  });
  try {
    const org = (await t.call("POST", "/api/orgs", { name: "bench-egress" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "egress", memory_mib: 1024 }))
      .body;
    const a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    const allow = [
      `bench.test:${up.port}`,
      `bench.test:${up.port + 1}`,
      `127.0.0.1:${up.port}`,
      `127.0.0.1:${up.port + 1}`,
    ];
    const set = await t.call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { network: { allow } } });
    if (set.status !== 200) throw new Error(`policy: ${JSON.stringify(set.body)}`);
    const args = [String(up.port), String(n), String(bytes), String(runs)];
    log(`egress: ${n} requests and ${runs} streams of ${bytes / 1e6} MB, direct on the host`);
    // not execFileSync: the upstreams live in this process's event loop
    const { stdout } = await promisify(execFile)("python3", ["-c", CLIENT, "direct", ...args], {
      encoding: "utf8",
      maxBuffer: 1 << 24,
    });
    const direct = JSON.parse(stdout) as ClientOut;
    log("egress: the same through the proxy, from a box");
    const r = await t.call("POST", `/api/agents/${a.id}/exec`, {
      argv: ["python3", "-c", CLIENT, "proxy", ...args],
      timeout_ms: 600_000,
    });
    if (r.status !== 200 || r.body.exit_code !== 0)
      throw new Error(`the proxied client failed: ${JSON.stringify(r.body)}`);
    const proxied = JSON.parse(r.body.stdout as string) as ClientOut;
    return {
      direct: summarize(direct.ms),
      proxied: summarize(proxied.ms),
      requests: n,
      tunnelBytes: bytes,
      directMBps: direct.mbps,
      tunnelMBps: proxied.mbps,
    };
  } finally {
    await t.server.runtime.stopAll("bench over");
    await t.close();
    await up.close();
  }
}

const median = (v: number[]): number => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)] ?? NaN;
const yesNo = (ok: boolean): string => (ok ? "yes" : "no");

/** The rows of `make bench`'s table (without its "vs floor" column). */
export function egressTable(e: EgressBench): {
  what: string;
  p50: string;
  p99: string;
  target: string;
  met: string;
  data: Record<string, unknown>;
}[] {
  const added = e.proxied.p50 - e.direct.p50;
  const direct = median(e.directMBps);
  const tunnel = median(e.tunnelMBps);
  const mb = (e.tunnelBytes / 1e6).toFixed(0);
  return [
    {
      what: `egress: ${e.requests} plain HTTP requests, direct to a loopback server (host, keep-alive)`,
      p50: fmt(e.direct.p50),
      p99: fmt(e.direct.p99),
      target: "",
      met: "",
      data: { n: e.direct.n, p50_ms: e.direct.p50, p99_ms: e.direct.p99 },
    },
    {
      what: `egress: the same from a box through the proxy (+${fmt(added)} ms added at p50)`,
      p50: fmt(e.proxied.p50),
      p99: fmt(e.proxied.p99),
      target: "≤ 2 ms added",
      met: yesNo(added <= 2),
      data: {
        n: e.proxied.n,
        p50_ms: e.proxied.p50,
        p99_ms: e.proxied.p99,
        added_p50_ms: added,
        target_added_ms: 2,
      },
    },
    {
      what: `egress: one TCP stream of ${mb} MB, direct (host)`,
      p50: `${direct.toFixed(0)} MB/s (median)`,
      p99: `${Math.min(...e.directMBps).toFixed(0)} MB/s (slowest)`,
      target: "",
      met: "",
      data: { mb_per_s: e.directMBps, median_mb_per_s: direct, bytes: e.tunnelBytes },
    },
    {
      what: `egress: the same through one CONNECT tunnel into a box (${(tunnel / direct).toFixed(2)}× direct)`,
      p50: `${tunnel.toFixed(0)} MB/s (median)`,
      p99: `${Math.min(...e.tunnelMBps).toFixed(0)} MB/s (slowest)`,
      target: "≥ 500 MB/s",
      met: yesNo(tunnel >= 500),
      data: { mb_per_s: e.tunnelMBps, median_mb_per_s: tunnel, ratio_to_direct: tunnel / direct },
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const rows = egressTable(await benchEgress({ log: (s) => process.stderr.write(`${s}\n`) }));
  const headers = ["what", "p50 ms", "p99 ms", "target", "met?"];
  process.stdout.write(
    `${table(
      headers,
      rows.map((r) => [r.what, r.p50, r.p99, r.target, r.met]),
    )}\n`,
  );
}
