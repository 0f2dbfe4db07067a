// The terminal's output is redacted of the agent's secrets before any viewer or the
// scrollback gets it, on a real box through a real server and a real ws client: a value cat
// from a file, a value split across two writes far apart, a secret granted while the terminal
// runs (the replay included), a value the agent stores from the box; and typing still echoes
// at once.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BOX_PATHS } from "../../src/boxes/index.js";
import { REDACTED } from "../../src/secrets/redact.js";
import { boxSkipReason } from "../box/fixture.js";
import { putHomeFile } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { tty, type Tty } from "./ws.js";

const skip = boxSkipReason() ?? false;
const wsUrl = (t: TestServer, path: string) => `${t.url!.replace(/^http/, "ws")}${path}`;

const FIRST = "tty-s3cret-VALUE-0123456789";
const LATER = "late-grant-VALUE-9876543210";
const STORED = "kept-in-box-VALUE-abcdefgh";
const PATCHED = "patched-grant-VALUE-24680";

describe("the terminal's output is redacted", { skip }, () => {
  let t: TestServer;
  let org: { id: string };
  let a: { id: string };
  const open: Tty[] = [];
  const ttyOf = async () => {
    const x = await tty(wsUrl(t, `/api/agents/${a.id}/cli/tty`));
    open.push(x);
    await x.message("attached");
    return x;
  };
  const secret = async (name: string, value: string) => {
    const r = await t.call("POST", "/api/secrets", {
      org_id: org.id,
      name,
      value,
      grants: [{ scope: "agent", id: a.id }],
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  };
  const put = (p: string, data: string) => putHomeFile(t, a.id, p, data);

  before(async () => {
    t = await startTestServer({ listen: true });
    org = (await t.call("POST", "/api/orgs", { name: "termredact" })).body;
    const machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 }))
      .body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" })).body;
    await secret("TTY_TOKEN", FIRST);
    await put("token.txt", `${FIRST}\n`);
    await put("later.txt", `${LATER}\n`);
    await put("stored.txt", `${STORED}\n`);
    await put("patched.txt", `${PATCHED}\n`);
  });
  after(async () => {
    for (const x of open) x.ws.terminate();
    await t?.close();
  });

  test("cat of a file holding a secret's value shows [redacted], live and in the replay", async () => {
    assert.equal(REDACTED, "[redacted]");
    const x = await ttyOf();
    x.type('cat token.txt; echo "<$(wc -c < token.txt)>"; echo CAT""DONE\r');
    await x.expect(/CATDONE/);
    const out = x.out();
    assert.ok(!out.includes(FIRST), out);
    // the file holds the value (28 bytes with its newline), and the screen shows the mark
    assert.match(out, new RegExp(`^\\[redacted\\]\\r\\n<${FIRST.length + 1}>\\r$`, "m"));
    x.ws.close();
    await x.closed;
    const y = await ttyOf();
    await y.expect(/CATDONE/); // replayed
    assert.ok(y.out().includes("[redacted]\r\n<28>"), y.out());
    assert.ok(!y.out().includes(FIRST), y.out());
  });

  test("a value split across two writes far apart is still redacted", async () => {
    const x = await ttyOf();
    const at = x.out().length;
    const [head, tail] = [FIRST.slice(0, 9), FIRST.slice(9)];
    x.type(`printf '%s' '${head}'; sleep 0.4; printf '%s\\n' '${tail}'; echo SPLIT""DONE\r`);
    // while it sleeps, the head waits: it is the start of a value
    await x.expect(/SPLITDONE/, at);
    const out = x.out().slice(at);
    assert.ok(!out.includes(FIRST), out);
    assert.match(out, /^\[redacted\]\r\nSPLITDONE\r$/m);
    // and a head that turned out to be no value is let out as it was
    const at2 = x.out().length;
    x.type(`printf '%s' '${head}'; sleep 0.3; printf '!\\n'; echo NOT""IT\r`);
    await x.expect(/NOTIT/, at2);
    assert.match(x.out().slice(at2), new RegExp(`^${head}!\\r\\nNOTIT\\r$`, "m"));
  });

  test("typing echoes at once", async () => {
    const x = await ttyOf();
    let worst = 0;
    for (const key of "echo quick") {
      const at = x.out().length;
      const t0 = performance.now();
      x.type(key);
      await x.expect(new RegExp(key === " " ? " " : key), at, 2000);
      worst = Math.max(worst, performance.now() - t0);
    }
    x.type("\r");
    await x.expect(/^quick\r$/m);
    // held bytes are let out a few ms after the output goes quiet; a loaded machine adds some
    assert.ok(worst < 500, `the slowest echo took ${worst.toFixed(1)} ms`);
    console.log(`# slowest echo of a key: ${worst.toFixed(1)} ms`);
  });

  test("a secret granted while the terminal runs: redacted from the grant's answer on, the replay too", async () => {
    const x = await ttyOf();
    const at = x.out().length;
    x.type('cat later.txt; cat patched.txt; echo BEFORE""GRANT\r');
    await x.expect(/BEFOREGRANT/, at);
    assert.ok(x.out().includes(LATER) && x.out().includes(PATCHED), "not secrets yet: shown");
    // one created with a grant, one granted afterwards
    await secret("LATE_TOKEN", LATER);
    const r = await t.call("POST", "/api/secrets", { org_id: org.id, name: "PATCHED", value: PATCHED });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const p = await t.call("PATCH", `/api/secrets/${r.body.id}`, { grants: [{ scope: "agent", id: a.id }] });
    assert.equal(p.status, 200, JSON.stringify(p.body));
    // the same viewer, no new attach
    const from = x.out().length;
    x.type('cat later.txt; cat patched.txt; echo AFTER""GRANT\r');
    await x.expect(/AFTERGRANT/, from);
    const out = x.out().slice(from);
    assert.ok(!out.includes(LATER) && !out.includes(PATCHED), out);
    assert.match(out, /^\[redacted\]\r\n\[redacted\]\r\nAFTERGRANT\r$/m);
    // a viewer attaching now is replayed the screen without them
    const y = await ttyOf();
    await y.expect(/AFTERGRANT/);
    assert.ok(y.out().includes("BEFOREGRANT"), y.out());
    assert.ok(!y.out().includes(LATER) && !y.out().includes(PATCHED), y.out());
  });

  test("a value the agent stores from its box is redacted at once", async () => {
    const x = await ttyOf();
    const at = x.out().length;
    // by its full path: a login shell's profile sets its own PATH
    x.type(
      `${BOX_PATHS.bin}/warren-secret store KEPT stored.txt; echo "code $?"; cat stored.txt; echo STORE""DONE\r`,
    );
    await x.expect(/STOREDONE/, at);
    const out = x.out().slice(at);
    assert.match(out, /^code 0\r$/m);
    assert.ok(!out.includes(STORED), out);
    assert.match(out, /^\[redacted\]\r\nSTOREDONE\r$/m);
  });
});
