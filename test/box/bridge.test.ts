// boxd's bridges: a port in the box whose connections reach the server as byte streams,
// each tagged with the uid that owns the connecting socket.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import type { Duplex } from "node:stream";
import { after, before, describe, it } from "node:test";
import { BOX_BRIDGES } from "../../src/boxes/index.js";
import type { BridgeOffer, CallsChannel } from "../../src/boxd/index.js";
import { boxSkipReason, makeBox, type TestBox } from "./fixture.js";

const skip = boxSkipReason();
const PORT = BOX_BRIDGES.egress;
const walls = { network: { connect: [{ first: PORT, last: BOX_BRIDGES.gateway }] } };

/** bash in the box: connects to the bridge, sends `send`, prints what comes back, then "ended". */
const client = (send: string): string[] => [
  "/bin/bash",
  "-c",
  `exec 3<>/dev/tcp/127.0.0.1/${PORT} || exit 7; printf '%s\\n' '${send}' >&3; cat <&3; echo ended`,
];

describe("boxd's bridges", { skip: skip ?? false }, () => {
  let box: TestBox;
  let channel: CallsChannel | undefined;
  const offers: BridgeOffer[] = [];
  /** What the server side does with each claimed stream. */
  let serve: (s: Duplex, offer: BridgeOffer) => void = (s) => s.destroy();

  before(async () => {
    box = await makeBox({
      agents: 2,
      bridges: Object.entries(BOX_BRIDGES).map(([name, port]) => ({ name, port })),
    });
  });
  after(async () => {
    channel?.close();
    await box?.cleanup();
  });

  it("closes a connection at once while no server holds the bridges channel", async () => {
    const t0 = Date.now();
    const r = await box.run(client("hello"), walls);
    assert.equal(r.exitCode, 0, r.err);
    assert.equal(r.out, "ended\n");
    assert.ok(Date.now() - t0 < 5000);
  });

  it("carries each connection to the server tagged with the connecting uid", async () => {
    const c = box.client();
    channel = await c.bridges((offer) => {
      offers.push(offer);
      void c.bridge(offer.id).then((s) => {
        serve(s, offer);
        s.resume();
      });
    });
    serve = (s, offer) => {
      let got = "";
      s.on("data", (d: Buffer) => {
        got += d.toString();
        if (got.endsWith("\n")) s.end(`${offer.name} ${offer.uid} ${got.trim().toUpperCase()}\n`);
      });
    };
    for (const n of [0, 1]) {
      const r = await box.run(client(`from agent ${n}`), { ...walls, agent: n });
      assert.equal(r.exitCode, 0, r.err);
      assert.equal(r.out, `egress ${box.agents[n]!.uid} FROM AGENT ${n}\nended\n`);
    }
    assert.deepEqual(
      offers.map((o) => [o.name, o.uid]),
      [
        ["egress", box.agents[0]!.uid],
        ["egress", box.agents[1]!.uid],
      ],
    );
  });

  it("names the bridge by its port and carries large streams both ways", async () => {
    const big = crypto.randomBytes(3 * 1024 * 1024);
    const digest = crypto.createHash("sha256").update(big).digest("hex");
    serve = (s, offer) => {
      const h = crypto.createHash("sha256");
      s.on("data", (d: Buffer) => h.update(d));
      s.on("end", () => {
        // the client's half-close reached us: answer with the digest and a big stream
        s.write(`${offer.name} ${h.digest("hex")}\n`);
        s.end(big);
      });
    };
    const script = [
      "import socket, sys, hashlib",
      `s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.gateway}))`,
      "data = open('/tmp/big', 'rb').read()",
      "s.sendall(data); s.shutdown(socket.SHUT_WR)",
      "buf = b''",
      "while True:",
      "    d = s.recv(65536)",
      "    if not d: break",
      "    buf += d",
      "line, rest = buf.split(b'\\n', 1)",
      "print(line.decode(), hashlib.sha256(rest).hexdigest())",
    ].join("\n");
    const w = await box.run(["/bin/sh", "-c", "cat > /tmp/big"], { stdin: big });
    assert.equal(w.exitCode, 0, w.err);
    const r = await box.run(["python3", "-c", script], walls);
    assert.equal(r.exitCode, 0, r.err);
    assert.equal(r.out.trim(), `gateway ${digest} ${digest}`);
  });

  it("closes a connection the server does not claim within 10 s", async () => {
    const seen = offers.length;
    serve = () => {};
    let claimed = 0;
    channel?.close();
    const c = box.client();
    channel = await c.bridges((offer) => {
      offers.push(offer);
      claimed++;
    });
    const t0 = Date.now();
    const r = await box.run(client("x"), { ...walls, timeoutMs: 20_000 });
    assert.equal(r.exitCode, 0, r.err);
    assert.equal(r.out, "ended\n");
    const took = Date.now() - t0;
    assert.ok(took >= 9000 && took < 15_000, `closed after ${took} ms`);
    assert.equal(offers.length, seen + 1);
    assert.equal(claimed, 1);
    // a claim that comes too late is refused
    await assert.rejects(c.bridge(offers.at(-1)!.id), /no bridged connection/);
  });
});
