import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  FrameDecoder,
  FrameKind,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  ProtocolError,
  encodeControl,
  encodeFrame,
  splitPayload,
} from "./protocol.js";
import { parseAgentCall, parseExecSpec, parsePtySpec, parseServerMessage } from "./validate.js";

const exec = {
  argv: ["/bin/true"],
  env: { A: "1" },
  cwd: "/home/a1",
  uid: 10000,
  gid: 10000,
  groups: [9999],
  timeoutMs: 1000,
};

describe("framing", () => {
  it("round-trips frames split at every byte", () => {
    const wire = Buffer.concat([
      encodeControl({ v: PROTOCOL_VERSION, op: "exec", exec }),
      encodeFrame(FrameKind.stdin, Buffer.from("abc")),
      encodeFrame(FrameKind.stdout, Buffer.alloc(0)),
      encodeControl({ type: "stdin_eof" }),
    ]);
    for (let cut = 0; cut <= wire.length; cut++) {
      const d = new FrameDecoder();
      const frames = [...d.push(wire.subarray(0, cut)), ...d.push(wire.subarray(cut))];
      assert.deepEqual(
        frames.map((f) => [f.kind, f.payload.length]),
        [
          [FrameKind.control, frames[0]!.payload.length],
          [FrameKind.stdin, 3],
          [FrameKind.stdout, 0],
          [FrameKind.control, 20],
        ],
      );
    }
  });

  it("takes at most max frames and hands back the raw rest", () => {
    const d = new FrameDecoder();
    const wire = Buffer.concat([encodeControl({ type: "forwarded" }), Buffer.from("raw bytes")]);
    const [first, ...more] = d.push(wire, 1);
    assert.equal(first?.kind, FrameKind.control);
    assert.equal(more.length, 0);
    assert.equal(d.rest().toString(), "raw bytes");
  });

  it("refuses oversize and unknown frames", () => {
    const huge = Buffer.alloc(5);
    huge.writeUInt32BE(MAX_FRAME_BYTES + 1, 0);
    assert.throws(() => new FrameDecoder().push(huge), ProtocolError);
    const unknown = Buffer.from([0, 0, 0, 1, 99]);
    assert.throws(() => new FrameDecoder().push(unknown), /unknown frame kind/);
    assert.throws(() => encodeFrame(FrameKind.stdout, Buffer.alloc(MAX_FRAME_BYTES)), /too large/);
    assert.deepEqual(
      [...splitPayload(Buffer.alloc(10), 4)].map((b) => b.length),
      [4, 4, 2],
    );
  });
});

describe("validation", () => {
  it("accepts a well-formed exec", () => {
    assert.deepEqual(parseExecSpec(exec), exec);
    assert.deepEqual(parseExecSpec({ ...exec, groups: undefined, timeoutMs: undefined }).groups, []);
    const fence = { home: "/home/a", keep: ["proj"], place: { from: ".warren/worktrees/c", at: "proj/app" } };
    assert.deepEqual(parseExecSpec({ ...exec, fence }).fence, fence);
  });

  it("refuses a worktree placed by a path that is not a plain folder of the home", () => {
    for (const place of [{ from: "../x", at: "proj/app" }, { from: "w", at: "/proj" }, { from: "w" }, "w"])
      assert.throws(
        () => parseExecSpec({ ...exec, fence: { home: "/home/a", place } }),
        /exec\.fence\.place/,
      );
  });

  it("refuses root, system ids, relative or dotted paths and NULs", () => {
    assert.throws(() => parseExecSpec({ ...exec, uid: 0 }), /uid/);
    assert.throws(() => parseExecSpec({ ...exec, gid: 0 }), /gid/);
    assert.throws(() => parseExecSpec({ ...exec, groups: [0] }), /groups/);
    assert.throws(() => parseExecSpec({ ...exec, cwd: "home" }), /cwd/);
    assert.throws(() => parseExecSpec({ ...exec, cwd: "/home/../etc" }), /cwd/);
    assert.throws(() => parseExecSpec({ ...exec, agentDir: "/run/boxd/../x" }), /agentDir/);
    assert.throws(
      () => parseExecSpec({ ...exec, files: { read: ["/a/../b"], write: [] } }),
      /files\.read\[0\]/,
    );
    assert.throws(() => parseExecSpec({ ...exec, files: { read: [], write: "/x" } }), /files\.write/);
    assert.throws(
      () => parseExecSpec({ ...exec, files: { read: Array(129).fill("/x"), write: [] } }),
      /at most 128/,
    );
    assert.throws(
      () => parseExecSpec({ ...exec, bindPorts: { first: 20000, last: 21000 } }),
      /bindPorts\.last/,
    );
    assert.throws(
      () => parseExecSpec({ ...exec, bindPorts: { first: 70000, last: 70001 } }),
      /bindPorts\.first/,
    );
    assert.deepEqual(parseExecSpec({ ...exec, bindPorts: { first: 20000, last: 20099 } }).bindPorts, {
      first: 20000,
      last: 20099,
    });
    const walled = { network: { connect: [{ first: 20000, last: 20099 }] } };
    assert.deepEqual(parseExecSpec({ ...exec, ...walled }).network, walled.network);
    assert.throws(() => parseExecSpec({ ...exec, network: { connect: [] } }), /1 to 8 port ranges/);
    assert.throws(
      () => parseExecSpec({ ...exec, network: { connect: [{ first: 20000, last: 21500 }] } }),
      /network\.connect\[0\]\.last/,
    );
    assert.throws(() => parseExecSpec({ ...exec, network: "open" }), /exec\.network must be an object/);
    assert.deepEqual(parseExecSpec({ ...exec, files: { read: ["/usr"], write: ["/home/a"] } }).files, {
      read: ["/usr"],
      write: ["/home/a"],
    });
    assert.throws(() => parseExecSpec({ ...exec, argv: [] }), /argv/);
    assert.throws(() => parseExecSpec({ ...exec, argv: ["a\0b"] }), /NUL/);
    assert.throws(() => parseExecSpec({ ...exec, env: { "A=B": "x" } }), /env/);
  });
});

describe("terminals", () => {
  const { timeoutMs: _t, ...walls } = exec as typeof exec & { timeoutMs?: number };
  it("takes an exec's walls and a size", () => {
    const pty = parsePtySpec({ ...walls, cols: 80, rows: 24 });
    assert.equal(pty.cols, 80);
    assert.equal(pty.rows, 24);
    assert.equal(pty.uid, exec.uid);
    assert.equal("timeoutMs" in pty, false);
  });
  it("refuses a bad size, root, and what only commands take", () => {
    const bad: [unknown, RegExp][] = [
      [null, /pty must be an object/],
      [{ ...walls, cols: 0, rows: 24 }, /pty\.cols/],
      [{ ...walls, cols: 80, rows: 1001 }, /pty\.rows/],
      [{ ...walls, cols: 80 }, /pty\.rows/],
      [{ ...walls, uid: 0, cols: 80, rows: 24 }, /exec\.uid/],
      [{ ...walls, timeoutMs: 5, cols: 80, rows: 24 }, /no timeoutMs/],
      [{ ...walls, generation: true, cols: 80, rows: 24 }, /no timeoutMs, agentDir or generation/],
    ];
    for (const [x, why] of bad) assert.throws(() => parsePtySpec(x), why, JSON.stringify(x));
  });
});

describe("agents' calls", () => {
  it("takes list and store, with nothing else", () => {
    assert.deepEqual(parseAgentCall({ op: "list" }), { op: "list" });
    assert.deepEqual(parseAgentCall({ op: "store", name: "MY_TOKEN", path: "/home/a/t.txt" }), {
      op: "store",
      name: "MY_TOKEN",
      path: "/home/a/t.txt",
    });
  });

  it("refuses anything that names a caller, other ops and bad shapes", () => {
    const bad: [unknown, RegExp][] = [
      ["list", /must be an object/],
      [null, /must be an object/],
      [[{ op: "list" }], /must be an object/],
      [{}, /op must be "list" or "store"/],
      [{ op: "get", name: "MY_TOKEN" }, /op must be "list" or "store"/],
      [{ op: "delete", name: "MY_TOKEN" }, /op must be "list" or "store"/],
      [{ op: "list", agent_id: "agt_0000000000000000" }, /list takes nothing else/],
      [{ op: "store", name: "A", path: "/home/a/t", uid: 10001 }, /name and a path only, not uid/],
      [{ op: "store", name: "A", path: "/home/a/t", agent_id: "x" }, /not agent_id/],
      [{ op: "store", name: 1, path: "/home/a/t" }, /name must be a string/],
      [{ op: "store", name: "", path: "/home/a/t" }, /1 to 128/],
      [{ op: "store", name: "A".repeat(129), path: "/home/a/t" }, /1 to 128/],
      [{ op: "store", name: "A\0", path: "/home/a/t" }, /without NUL/],
      [{ op: "store", name: "A", path: "t.txt" }, /absolute path/],
      [{ op: "store", name: "A", path: "/home/a/../b/t" }, /without \.\./],
      [{ op: "store", name: "A", path: `/home/a/${"x".repeat(4100)}` }, /at most 4096/],
      [{ op: "store", name: "A" }, /path must be a string/],
    ];
    for (const [x, want] of bad) assert.throws(() => parseAgentCall(x), want, JSON.stringify(x));
    assert.throws(() => parseAgentCall({ op: "value" }), ProtocolError);
  });

  it("reads boxd's call and calls messages, checking the call's id and uid", () => {
    const call = { type: "call", id: 7, uid: 10003, request: { op: "list" } };
    assert.deepEqual(parseServerMessage(Buffer.from(JSON.stringify(call))), call);
    assert.deepEqual(parseServerMessage(Buffer.from('{"type":"calls"}')), { type: "calls" });
    for (const bad of [
      { ...call, id: 0 },
      { ...call, id: 1.5 },
      { ...call, uid: -1 },
      { ...call, uid: "10003" },
    ])
      assert.throws(() => parseServerMessage(Buffer.from(JSON.stringify(bad))), ProtocolError);
  });

  it("reads boxd's bridge and bridges messages, checking the id, name and uid", () => {
    const offer = { type: "bridge", id: 3, name: "egress", uid: 10001 };
    assert.deepEqual(parseServerMessage(Buffer.from(JSON.stringify(offer))), offer);
    assert.deepEqual(parseServerMessage(Buffer.from('{"type":"bridges"}')), { type: "bridges" });
    for (const bad of [
      { ...offer, id: 0 },
      { ...offer, uid: -1 },
      { ...offer, name: 7 },
    ])
      assert.throws(() => parseServerMessage(Buffer.from(JSON.stringify(bad))), ProtocolError);
  });

  it("encodes the open message and a reply", () => {
    const open = new FrameDecoder().push(encodeControl({ v: PROTOCOL_VERSION, op: "calls" }))[0]!;
    assert.deepEqual(JSON.parse(open.payload.toString()), { v: 1, op: "calls" });
    const reply = new FrameDecoder().push(
      encodeControl({ type: "reply", id: 3, exit: 1, stderr: "no\n" }),
    )[0]!;
    assert.equal(reply.kind, FrameKind.control);
    assert.deepEqual(JSON.parse(reply.payload.toString()), { type: "reply", id: 3, exit: 1, stderr: "no\n" });
  });
});
