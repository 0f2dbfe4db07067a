// Egress approvals (a sandbox policy's network.ask): what the proxy adds to a request of a
// host the list allows when the policy also asks (nothing waits), beside the same policy
// without `ask` and a direct request; and the time from a person's decision (the POST of
// the approval) to the held request's arrival at the upstream. The client runs in a box
// as an agent; the upstream is on this host's loopback. Run alone:
// node --import tsx bench/egress-ask.ts
import { execFile } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { BOX_BRIDGES } from "../src/boxes/index.js";
import { startTestServer } from "../test/support/server.js";
import { fmt, summarize, table, type Sample } from "./stats.js";

export interface AskBench {
  direct: Sample;
  listed: Sample;
  asking: Sample;
  decided: Sample;
}

/** What the bench reads of an approval. */
interface Waiting {
  id: string;
  args_sha256: string;
  status: string;
  arguments: { host: string };
}

/** n keep-alive GETs of bench.test through the proxy (or direct): each one's ms, as JSON. */
const KEEPALIVE = `
import json, socket, sys, time
mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}) if mode == "proxy" else ("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
url = "http://bench.test:%d/" % port if mode == "proxy" else "/"
req = ("GET %s HTTP/1.1\\r\\nHost: bench.test:%d\\r\\n\\r\\n" % (url, port)).encode()
out = []
for i in range(n + 20):
    t = time.perf_counter()
    s.sendall(req)
    data = b""
    while b"\\r\\n\\r\\nok" not in data:
        d = s.recv(65536)
        if not d: raise SystemExit("closed: " + repr(data))
        data += d
    if i >= 20: out.append((time.perf_counter() - t) * 1000)
print(json.dumps(out))
`;

/** One plain GET to each of ask-1.test .. ask-n.test in turn (each held until decided). */
const HELD = `
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
for i in range(1, n + 1):
    s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}))
    s.sendall(("GET http://ask-%d.test:%d/ HTTP/1.1\\r\\nHost: ask-%d.test:%d\\r\\nConnection: close\\r\\n\\r\\n" % (i, port, i, port)).encode())
    data = b""
    while True:
        d = s.recv(65536)
        if not d: break
        data += d
    if not data.startswith(b"HTTP/1.1 200"): raise SystemExit(data.decode(errors="replace"))
    s.close()
print("done")
`;

export async function benchEgressAsk(
  opts: { requests?: number; decisions?: number; log?: (s: string) => void } = {},
): Promise<AskBench> {
  const n = opts.requests ?? 1000;
  const decisions = opts.decisions ?? 20;
  const log = opts.log ?? (() => {});
  /** When each ask-K.test request reached the upstream (performance.now()). */
  const arrived = new Map<string, number>();
  const web = http.createServer((req, res) => {
    const host = (req.headers.host ?? "").split(":")[0] ?? "";
    if (host.startsWith("ask-")) arrived.set(host, performance.now());
    res.end("ok");
  });
  web.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
  const port = (web.address() as AddressInfo).port;
  const names = ["bench.test", ...Array.from({ length: decisions }, (_, i) => `ask-${i + 1}.test`)];
  const t = await startTestServer({
    env: { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${port}` },
    egressHosts: Object.fromEntries(names.map((h) => [h, ["127.0.0.1"]])),
  });
  try {
    const org = (await t.call("POST", "/api/orgs", { name: "bench-ask" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "ask", memory_mib: 1024 })).body;
    const a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    const policy = async (network: unknown) => {
      const r = await t.call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { network } });
      if (r.status !== 200) throw new Error(`policy: ${JSON.stringify(r.body)}`);
    };
    const proxied = async (): Promise<number[]> => {
      const r = await t.call("POST", `/api/agents/${a.id}/exec`, {
        argv: ["python3", "-c", KEEPALIVE, "proxy", String(port), String(n)],
        timeout_ms: 600_000,
      });
      if (r.status !== 200 || r.body.exit_code !== 0)
        throw new Error(`the proxied client failed: ${JSON.stringify(r.body)}`);
      return JSON.parse(r.body.stdout as string) as number[];
    };
    log(`egress ask: ${n} requests direct, then through the proxy without and with network.ask`);
    const { stdout } = await promisify(execFile)(
      "python3",
      ["-c", KEEPALIVE, "direct", String(port), String(n)],
      {
        encoding: "utf8",
      },
    );
    const direct = JSON.parse(stdout) as number[];
    // in turns, three each: a busy host's noise falls on both alike
    const listed: number[] = [];
    const asking: number[] = [];
    for (let round = 0; round < 3; round++) {
      await policy({ allow: [`bench.test:${port}`] });
      listed.push(...(await proxied()));
      await policy({ allow: [`bench.test:${port}`], ask: "*" });
      asking.push(...(await proxied()));
    }

    log(`egress ask: ${decisions} held requests, each allowed by a person`);
    const run = await t.call("POST", `/api/agents/${a.id}/runs`, {
      kind: "command",
      argv: ["python3", "-c", HELD, String(port), String(decisions)],
      timeout_s: 600,
    });
    if (run.status !== 202) throw new Error(`run: ${JSON.stringify(run.body)}`);
    const decided: number[] = [];
    for (let i = 1; i <= decisions; i++) {
      const host = `ask-${i}.test`;
      let ap: Waiting | undefined;
      const end = Date.now() + 60_000;
      while (!ap) {
        const list = (await t.call("GET", `/api/runs/${run.body.id}/approvals`)).body.items as Waiting[];
        ap = list.find((x) => x.arguments.host === host && x.status === "waiting");
        if (!ap && Date.now() > end) throw new Error(`no approval for ${host}`);
        if (!ap) await new Promise((r) => setTimeout(r, 5));
      }
      const t0 = performance.now();
      const r = await t.call("POST", `/api/approvals/${ap.id}`, {
        decision: "allow",
        args_sha256: ap.args_sha256,
      });
      if (r.status !== 200) throw new Error(`decide: ${JSON.stringify(r.body)}`);
      while (!arrived.has(host)) {
        if (performance.now() - t0 > 30_000) throw new Error(`${host} never arrived`);
        await new Promise((r) => setImmediate(r));
      }
      decided.push((arrived.get(host) as number) - t0);
    }
    return {
      direct: summarize(direct),
      listed: summarize(listed),
      asking: summarize(asking),
      decided: summarize(decided),
    };
  } finally {
    await t.server.runtime.stopAll("bench over");
    await t.close();
    web.closeAllConnections();
    await new Promise((r) => web.close(r));
  }
}

const yesNo = (ok: boolean): string => (ok ? "yes" : "no");

/** The rows of `make bench`'s table (without its "vs floor" column). */
export function egressAskTable(e: AskBench): {
  what: string;
  p50: string;
  p99: string;
  target: string;
  met: string;
  data: Record<string, unknown>;
}[] {
  const added = e.asking.p50 - e.direct.p50;
  return [
    {
      what: `egress ask: a listed host's request through the proxy, the policy asking for others (nothing waits; +${fmt(added)} ms over direct, +${fmt(e.asking.p50 - e.listed.p50)} ms over the same policy without ask)`,
      p50: fmt(e.asking.p50),
      p99: fmt(e.asking.p99),
      target: "≤ 2 ms added",
      met: yesNo(added <= 2),
      data: {
        n: e.asking.n,
        p50_ms: e.asking.p50,
        p99_ms: e.asking.p99,
        direct_p50_ms: e.direct.p50,
        without_ask_p50_ms: e.listed.p50,
        added_p50_ms: added,
        target_added_ms: 2,
      },
    },
    {
      what: `egress ask: a person's decision (POST of the approval) to the held request at the upstream (${e.decided.n} requests)`,
      p50: fmt(e.decided.p50),
      p99: fmt(e.decided.p99),
      target: "≤ 100 ms",
      met: yesNo(e.decided.p50 <= 100),
      data: { n: e.decided.n, p50_ms: e.decided.p50, p99_ms: e.decided.p99, target_ms: 100 },
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const rows = egressAskTable(await benchEgressAsk({ log: (s) => process.stderr.write(`${s}\n`) }));
  process.stdout.write(
    `${table(
      ["what", "p50 ms", "p99 ms", "target", "met?"],
      rows.map((r) => [r.what, r.p50, r.p99, r.target, r.met]),
    )}\n`,
  );
}
