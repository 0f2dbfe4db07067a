// Terminals in real boxes: boxd's pty op, a shell as the agent in a real pseudo-terminal,
// with the walls of its commands, resized, signalled and ended.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import type { PtySpec, PtyStream } from "../../src/boxd/index.js";
import { encodeControl, encodeFrame, FrameDecoder, FrameKind } from "../../src/boxd/protocol.js";
import { boxSkipReason, hostPidsOfUid, makeBox, PATH, waitFor, type TestBox } from "./fixture.js";

const skip = boxSkipReason();
const ESC = String.fromCharCode(27);

/** A terminal and everything it printed so far. */
interface Term {
  pty: PtyStream;
  text(): string;
  /** Waits until the output (from `from` on) matches, and answers the match. */
  expect(re: RegExp, from?: number, timeoutMs?: number): Promise<RegExpMatchArray>;
  type(s: string): void;
}

describe("terminals in a local box", { skip: skip ?? false }, () => {
  let box: TestBox;
  before(async () => {
    box = await makeBox();
  });
  after(async () => {
    await box?.cleanup();
  });

  const spec = (n = 0, extra: Partial<PtySpec> = {}): PtySpec => {
    const a = box.agents[n]!;
    return {
      argv: ["/bin/bash", "--noprofile", "--norc", "-i"],
      env: { PATH, HOME: a.home, TERM: "xterm-256color", PS1: "$ " },
      cwd: a.home,
      uid: a.uid,
      gid: a.gid,
      groups: a.groups,
      cols: 80,
      rows: 24,
      ...extra,
    };
  };

  const open = async (s: PtySpec): Promise<Term> => {
    let out = "";
    const pty = await box.client().pty(s, { onData: (c) => (out += c.toString("utf8")) });
    return {
      pty,
      text: () => out,
      type: (s) => void pty.write(Buffer.from(s)),
      expect: async (re, from = 0, timeoutMs = 10_000) => {
        let m: RegExpMatchArray | null = null;
        await waitFor(
          `${re} in the terminal`,
          () => (m = out.slice(from).match(re)) !== null,
          timeoutMs,
        ).catch(() => {
          throw new Error(`no ${re} in the terminal's output:\n${out.slice(from)}`);
        });
        return m!;
      },
    };
  };

  it("runs the shell as the agent in a terminal of its own, in its home, with exactly its environment", async () => {
    const a = box.agents[0]!;
    const t = await open(spec());
    t.type("tty; id -u; pwd; stty size; env | sort | tr '\\n' ' '; echo; echo E\"\"ND\n");
    await t.expect(/END/);
    const out = t.text();
    assert.match(out, /\/dev\/pts\/\d+/);
    assert.match(out, new RegExp(`^${a.uid}\\r?$`, "m"));
    assert.match(out, new RegExp(`^${a.home}\\r?$`, "m"));
    assert.match(out, /^24 80\r?$/m);
    assert.match(out, /TERM=xterm-256color/);
    assert.match(out, new RegExp(`HOME=${a.home}`));
    t.type("exit 7\n");
    const r = await t.pty.exited;
    assert.equal(r.exitCode, 7);
    assert.equal(r.cancelled, false);
    assert.ok(r.usage.cpuSeconds !== null);
  });

  it("the shell has the walls of a command: no capabilities, no_new_privs, seccomp, its uid's files only", async () => {
    const other = box.agents[1]!;
    const t = await open(
      spec(0, {
        files: {
          read: ["/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"],
          write: [box.agents[0]!.home, "/tmp", "/dev"],
        },
      }),
    );
    t.type(
      `grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; cat ${other.home}/x; echo E""ND\n`,
    );
    await t.expect(/END/);
    const out = t.text();
    assert.match(out, /CapEff:\s+0000000000000000/);
    assert.match(out, /CapBnd:\s+0000000000000000/);
    assert.match(out, /NoNewPrivs:\s+1/);
    assert.match(out, /Seccomp:\s+2/);
    assert.match(out, /Permission denied/);
    t.pty.cancel();
    assert.equal((await t.pty.exited).cancelled, true);
  });

  it("resizes: the program in front sees the new size and SIGWINCH", async () => {
    const t = await open(spec());
    t.type("trap 'echo WINCH $(stty size)' WINCH; echo RE\"\"ADY\n");
    await t.expect(/READY/);
    const at = t.text().length;
    t.pty.resize(132, 40);
    await t.expect(/WINCH 40 132/, at);
    t.type("stty size\n");
    await t.expect(/^40 132\r?$/m, at);
    t.type("exit\n");
    assert.equal((await t.pty.exited).exitCode, 0);
  });

  it("a signal or ^C reaches the job in front, and the shell stays", async () => {
    const t = await open(spec());
    t.type("sleep 1000\n");
    await waitFor("sleep to run", async () => (await box.sh("pgrep -x sleep")).exitCode === 0);
    t.pty.signal("SIGINT");
    let at = t.text().length;
    t.type("echo after $?\n");
    await t.expect(/after 130/, at);
    t.type("sleep 1000\n");
    await waitFor("sleep to run", async () => (await box.sh("pgrep -x sleep")).exitCode === 0);
    at = t.text().length;
    t.type("\x03");
    t.type("echo again $?\n");
    await t.expect(/again 130/, at);
    t.type("exit 3\n");
    assert.equal((await t.pty.exited).exitCode, 3);
  });

  it("full-screen programs draw: vi takes the alternate screen and leaves it", async () => {
    const t = await open(spec());
    t.type("vi -u NONE notes.txt\n");
    await t.expect(new RegExp(`${ESC}\\[\\?1049h`));
    const at = t.text().length;
    t.type("ihello from vi\x1b:wq\r");
    await t.expect(new RegExp(`${ESC}\\[\\?1049l`), at);
    t.type("cat notes.txt\n");
    await t.expect(/^hello from vi\r?$/m, at);
    t.type("exit\n");
    await t.pty.exited;
  });

  it("a cancel, or the connection gone, kills the whole tree, background jobs too", async () => {
    const a = box.agents[0]!;
    const t = await open(spec());
    t.type('sleep 1001 & sleep 1002 & setsid sleep 1003 & echo STA""RTED\n');
    await t.expect(/STARTED/);
    await waitFor("three sleeps", async () => (await box.sh("pgrep -c -x sleep")).out.trim() === "3");
    t.pty.cancel();
    const r = await t.pty.exited;
    assert.equal(r.cancelled, true);
    const left = async () => hostPidsOfUid(a.uid, await box.client().ping());
    assert.deepEqual(await left(), []);

    // the same when the client goes away without a word
    const endpoint = box.provider.endpoint(box.id);
    assert.equal(endpoint.kind, "unix");
    const sock = net.connect(endpoint.kind === "unix" ? endpoint.path : "");
    const decoder = new FrameDecoder();
    const started = new Promise<void>((resolve) =>
      sock.on("data", (c: Buffer) => {
        for (const f of decoder.push(c)) if (f.kind === FrameKind.control) resolve();
      }),
    );
    sock.write(encodeControl({ v: 1, op: "pty", pty: spec() }));
    await started;
    sock.write(encodeFrame(FrameKind.data, "sleep 1004 &\n"));
    await waitFor("a shell of the agent", async () => (await left()).length > 0);
    sock.destroy();
    await waitFor("the terminal's tree to be gone", async () => (await left()).length === 0, 10_000);
  });

  it("another agent cannot reach a terminal: not its device, not boxd's socket", async () => {
    const t = await open(spec(0));
    t.type("tty\n");
    const [device] = await t.expect(/\/dev\/pts\/\d+/);
    const other = await box.sh(
      `echo injected > ${device}; cat ${device} </dev/null; ls /run/boxd; echo DONE`,
      { agent: 1 },
    );
    assert.equal((other.err.match(/Permission denied/g) ?? []).length, 3, other.err);
    assert.doesNotMatch(t.text(), /injected/);
    t.pty.cancel();
    await t.pty.exited;
  });

  it("boxd refuses a bad terminal request and stays up", async () => {
    await assert.rejects(box.client().pty({ ...spec(), cols: 0 }, { onData: () => {} }), /pty\.cols/);
    await assert.rejects(box.client().pty({ ...spec(), uid: 0 }, { onData: () => {} }), /uid/);
    // past the client's checks: boxd's own
    const endpoint = box.provider.endpoint(box.id);
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(endpoint.kind === "unix" ? endpoint.path : "");
      const decoder = new FrameDecoder();
      sock.on("data", (c: Buffer) => {
        for (const f of decoder.push(c)) resolve(f.payload.toString());
      });
      sock.on("error", reject);
      sock.write(encodeControl({ v: 1, op: "pty", pty: { ...spec(), rows: 5000 } }));
    });
    assert.match(answer, /"code":"invalid".*pty\.rows/);
    assert.equal((await box.run(["/bin/true"])).exitCode, 0);
  });
});
