// Agents apart on the network: on an isolated machine an agent's commands reach only their
// own port block over TCP and only their own abstract unix sockets, and cannot signal
// another agent's processes; on a shared machine they reach each other as before. Through
// the API, on real boxes: the walls are the ones every exec and run gets.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

interface Agent {
  id: string;
  ports: { first: number; last: number };
}

/** A server in the agent's own block and on an abstract socket named after it, for 30 s. */
const SERVER = `
import os, socket, threading, time
me = os.environ["WARREN_AGENT_ID"]
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("127.0.0.1", int(os.environ["PORT"]))); t.listen()
u = socket.socket(socket.AF_UNIX); u.bind("\\0warren-apart-" + me); u.listen()
def serve(s):
    while True:
        c, _ = s.accept(); c.sendall(("secret of " + me).encode()); c.close()
for s in (t, u): threading.Thread(target=serve, args=(s,), daemon=True).start()
open("/tmp/pid-" + me, "w").write(str(os.getpid()))
time.sleep(30)
`;

/** Tries the other agent's port, abstract socket and process; prints name=REACHED or name=<errno>. */
const PROBE = `
import errno, os, socket, sys, time
other, port = sys.argv[1], int(sys.argv[2])
for _ in range(100):
    if os.path.exists("/tmp/pid-" + other): break
    time.sleep(0.1)
def attempt(name, fn):
    try: print(name + "=REACHED " + fn())
    except OSError as e: print(name + "=" + errno.errorcode.get(e.errno, str(e.errno)))
def tcp():
    s = socket.create_connection(("127.0.0.1", port), timeout=3); return s.recv(100).decode()
def abstract():
    s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect("\\0warren-apart-" + other); return s.recv(100).decode()
def signal():
    os.kill(int(open("/tmp/pid-" + other).read()), 0); return "signalled"
attempt("tcp", tcp); attempt("abstract", abstract); attempt("signal", signal)
`;

/** One command that serves on an abstract socket and connects to it itself. */
const OWN_ABSTRACT = `
import socket
u = socket.socket(socket.AF_UNIX); u.bind("\\0warren-own"); u.listen()
c = socket.socket(socket.AF_UNIX); c.connect("\\0warren-own"); print("own-abstract=REACHED")
`;

describe("agents apart on the network", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };

  before(async () => {
    t = await startTestServer();
    org = (await t.call("POST", "/api/orgs", { name: "apart" })).body;
  });
  after(async () => t.close());

  const exec = async (agent: Agent, body: Record<string, unknown>) => {
    const r = await t.call("POST", `/api/agents/${agent.id}/exec`, { timeout_ms: 20_000, ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { stdout: string; stderr: string; exit_code: number };
  };

  async function machineWithTwo(trust: "isolated" | "shared") {
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: trust, trust, memory_mib: 512 }))
      .body;
    const mk = async (name: string) =>
      (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name })).body as Agent;
    const a = await mk("a");
    const b = await mk("b");
    await exec(b, {
      command: 'setsid python3 -c "$SERVER" >/dev/null 2>&1 < /dev/null &',
      env: { SERVER },
    });
    return { m, a, b };
  }

  const results = (out: string) =>
    Object.fromEntries(
      out
        .trim()
        .split("\n")
        .map((l) => l.split("=") as [string, string]),
    );

  test("isolated: another agent's port, abstract socket and processes are out of reach", async () => {
    const { m, a, b } = await machineWithTwo("isolated");
    try {
      const r = await exec(a, { argv: ["python3", "-c", PROBE, b.id, String(b.ports.first)] });
      const got = results(r.stdout);
      assert.equal(got.tcp, "EACCES", r.stdout + r.stderr);
      assert.match(got.abstract ?? "", /^(EPERM|EACCES|ECONNREFUSED)$/, r.stdout + r.stderr);
      assert.equal(got.signal, "EPERM", r.stdout + r.stderr);
      assert.doesNotMatch(r.stdout, /secret of/);
      // its own block stays reachable from its other commands, and its own abstract sockets within one
      await exec(a, {
        command: 'setsid python3 -c "$SERVER" >/dev/null 2>&1 < /dev/null &',
        env: { SERVER },
      });
      const own = await exec(a, { argv: ["python3", "-c", PROBE, a.id, String(a.ports.first)] });
      assert.match(
        results(own.stdout).tcp ?? "",
        new RegExp(`^REACHED secret of ${a.id}$`),
        own.stdout + own.stderr,
      );
      const within = await exec(a, { argv: ["python3", "-c", OWN_ABSTRACT] });
      assert.equal(within.stdout.trim(), "own-abstract=REACHED", within.stderr);
    } finally {
      await t.call("POST", `/api/machines/${m.id}/stop`);
    }
  });

  test("shared: agents reach each other's servers, as the trust setting says", async () => {
    const { m, a, b } = await machineWithTwo("shared");
    try {
      const r = await exec(a, { argv: ["python3", "-c", PROBE, b.id, String(b.ports.first)] });
      const got = results(r.stdout);
      assert.equal(got.tcp, `REACHED secret of ${b.id}`, r.stdout + r.stderr);
      assert.equal(got.abstract, `REACHED secret of ${b.id}`, r.stdout + r.stderr);
    } finally {
      await t.call("POST", `/api/machines/${m.id}/stop`);
    }
  });
});
