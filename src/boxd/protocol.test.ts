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
  parseExecSpec,
  splitPayload,
} from "./protocol.js";

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
