// boxd keeps an exec's connection for the next exec when the client sent it everything
// (src/boxd/connection.ts KeptConnections, native/boxd/conn.h): real boxes, every command's
// input and output its own, and a connection left behind by a box that restarted replaced.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import type { BoxdClient, ExecRequest } from "../../src/boxd/index.js";
import { boxSkipReason, makeBox, PATH, type TestBox } from "./fixture.js";

const skip = boxSkipReason();

/** Counts the connections opened to boxd while `fn` runs. */
async function connectsDuring(fn: () => Promise<void>): Promise<number> {
  const original = net.connect;
  let n = 0;
  (net as { connect: typeof net.connect }).connect = ((...a: Parameters<typeof net.connect>) => {
    n++;
    return original(...a);
  }) as typeof net.connect;
  try {
    await fn();
  } finally {
    (net as { connect: typeof net.connect }).connect = original;
  }
  return n;
}

describe("kept connections to boxd", { skip: skip ?? false }, () => {
  let box: TestBox;
  let client: BoxdClient;
  const as = (argv: string[], extra: Partial<ExecRequest> = {}): ExecRequest => {
    const a = box.agents[0]!;
    return { argv, env: { PATH }, cwd: a.home, uid: a.uid, gid: a.gid, timeoutMs: 30_000, ...extra };
  };
  before(async () => {
    box = await makeBox({ agents: 1 });
    client = box.client();
  });
  after(async () => {
    await box?.cleanup();
  });

  it("runs execs one after another on one connection, each with its own stdin and output", async () => {
    const outs: string[] = [];
    const connects = await connectsDuring(async () => {
      for (let i = 0; i < 20; i++) {
        const r = await client.exec(
          as(["/bin/sh", "-c", `cat; echo " $0" >&2`, `n${i}`], { stdin: `in-${i}` }),
        );
        assert.equal(r.exitCode, 0);
        assert.equal(r.stderr.toString(), ` n${i}\n`);
        outs.push(r.stdout.toString());
      }
    });
    assert.deepEqual(
      outs,
      Array.from({ length: 20 }, (_, i) => `in-${i}`),
    );
    assert.equal(connects, 1, `${connects} connections for 20 execs one after another`);
  });

  it("keeps no connection of a cancelled exec, nor of one whose stdin streams", async () => {
    await client.exec(as(["/bin/true"])); // one kept connection now
    const connects = await connectsDuring(async () => {
      const ac = new AbortController();
      const r = await client.exec(as(["/bin/sleep", "100"]), {
        signal: ac.signal,
        onStart: () => ac.abort(),
      });
      assert.equal(r.cancelled, true);
      // the cancelled exec took the kept connection and did not give it back
      assert.equal((await client.exec(as(["/bin/echo", "after"]))).stdout.toString(), "after\n");
      async function* input() {
        yield "streamed";
      }
      const streamed = await client.exec(as(["/bin/cat"]), { stdinStream: input() });
      assert.equal(streamed.stdout.toString(), "streamed");
      assert.equal((await client.exec(as(["/bin/echo", "last"]))).stdout.toString(), "last\n");
    });
    // a new connection after the cancel, one for the streamed stdin, and the last exec reused
    // the connection kept after "after"
    assert.equal(connects, 2);
  });

  it("runs an exec anew when its kept connection died with the box", async () => {
    assert.equal((await client.exec(as(["/bin/echo", "before"]))).stdout.toString(), "before\n");
    await box.provider.stop(box.id);
    await box.provider.start(box.id);
    const r = await client.exec(as(["/bin/echo", "again"]));
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout.toString(), "again\n");
  });
});

describe("a command whose box stops", { skip: skip ?? false }, () => {
  let box: TestBox;
  before(async () => {
    box = await makeBox({ agents: 1 });
  });
  after(async () => {
    await box?.cleanup();
  });

  it("answers at once that boxd is gone, for a new connection and a kept one alike", async () => {
    const client = box.client();
    const a = box.agents[0]!;
    const req = { env: { PATH }, cwd: a.home, uid: a.uid, gid: a.gid, timeoutMs: 600_000 };
    await client.exec({ ...req, argv: ["/bin/true"] }); // a kept connection for the next
    for (const round of [1, 2]) {
      let started!: () => void;
      const running = new Promise<void>((r) => (started = r));
      const exec = client.exec({ ...req, argv: ["/bin/sleep", "600"] }, { onStart: () => started() });
      const outcome = exec.then(
        () => null,
        (err: unknown) => err as Error & { code?: string },
      );
      await running;
      const t0 = Date.now();
      await box.provider.stop(box.id);
      const err = await outcome;
      assert.equal(err?.code, "box.unavailable", String(err));
      assert.ok(Date.now() - t0 < 30_000, `round ${round}: answered after ${Date.now() - t0} ms`);
      await box.provider.start(box.id);
    }
  });
});

describe("a ready helper walled ahead", { skip: skip ?? false }, () => {
  let box: TestBox;
  before(async () => {
    box = await makeBox({ agents: 2 });
  });
  after(async () => {
    await box?.cleanup();
  });

  it("runs an agent's commands one after another without applying their walls again, and never one of other walls", async () => {
    const client = box.client();
    const [a, b] = [box.agents[0]!, box.agents[1]!];
    const as = (who: typeof a, argv: string[], extra: Partial<ExecRequest> = {}): ExecRequest => ({
      argv,
      env: { PATH },
      cwd: who.home,
      uid: who.uid,
      gid: who.gid,
      timeoutMs: 30_000,
      trace: true,
      ...extra,
    });
    const ownHome = (who: typeof a) => ({
      read: ["/usr", "/bin", "/lib", "/lib64", "/etc"],
      write: [who.home],
    });
    const probe = (who: typeof a, other: typeof a, files = ownHome(who)) =>
      client.exec(
        as(who, ["/bin/sh", "-c", `id -u; cat ${other.home}/x 2>/dev/null || echo refused; echo hi > own`], {
          files,
        }),
      );
    await client.exec(as(a, ["/bin/sh", "-c", "echo a > x"]));
    await client.exec(as(b, ["/bin/sh", "-c", "echo b > x"]));
    // a, a, a, b, a, then a with other rules: each runs as itself, under its own rules
    const runs = [
      ["a", await probe(a, b)],
      ["a", await probe(a, b)],
      ["a", await probe(a, b)],
      ["b", await probe(b, a)],
      ["a", await probe(a, b)],
      ["a, its home read-only", await probe(a, b, { read: [...ownHome(a).read, a.home], write: [] })],
    ] as const;
    const uid = { a: a.uid, b: b.uid };
    for (const [who, r] of runs) {
      const lines = r.stdout.toString().split("\n");
      assert.equal(lines[0], String(uid[who[0] as "a" | "b"]), `${who}: its own uid`);
      assert.equal(lines[1], "refused", `${who}: the other agent's file stays closed`);
    }
    assert.equal(runs[5][1].exitCode, 2, "the read-only rules hold: `echo hi > own` fails");
    assert.match(runs[5][1].stderr.toString(), /Permission denied|Read-only/);
    for (const i of [0, 1, 2, 3, 4]) assert.equal(runs[i]![1].exitCode, 0, runs[i]![1].stderr.toString());
    // the third of the same walls (the same twice before it) found them applied ahead: no
    // Landlock, no seccomp on its way
    const t = runs[2][1].trace!;
    assert.equal(t.landlockUs, t.privilegesUs);
    assert.equal(t.seccompUs, t.privilegesUs);
    assert.ok(t.specReadUs <= t.privilegesUs);
    // the first of them, and one of other walls (b after a), were given everything
    for (const fresh of [runs[0][1].trace!, runs[3][1].trace!])
      assert.ok(fresh.seccompUs > fresh.privilegesUs, JSON.stringify(fresh));
  });
});
