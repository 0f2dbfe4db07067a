// The oci provider refuses, with one line that says the fix, when its engine or its image
// is missing: at boot (its checks) and at a box's start.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parseConfig } from "../../config/index.js";
import { createServer } from "../../server.js";
import { OciProvider } from "./provider.js";

const spec = (id: string) => ({
  id,
  labels: {
    "warren.kind": "machine" as const,
    "warren.org": "o",
    "warren.machine": id,
    "warren.provider": "oci" as const,
  },
  mounts: [],
  limits: { memoryMib: 64, cpus: 1, pids: 64, tmpMib: 8 },
});

test("no engine at the socket: the checks say how to start it, and a box is refused", async () => {
  const stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "wo-"));
  const p = new OciProvider({
    stateRoot,
    socket: path.join(stateRoot, "none.sock"),
    image: "warren-box:latest",
  });
  try {
    const probes = p.hostProbes();
    const engine = await probes.oci_engine!();
    assert.equal(engine.ok, false);
    assert.match(engine.detail, /no engine answers at .*none\.sock/);
    assert.match(engine.fix, /scripts\/oci\.sh service/);
    assert.equal((await probes.oci_image!()).ok, false);
    await p.create(spec("noengine")).catch(() => undefined);
    await assert.rejects(p.start("noengine"), (err: Error & { code?: string }) => {
      assert.equal(err.code, "box.unavailable");
      assert.match(err.message, /does not answer.*scripts\/oci\.sh service/);
      return true;
    });
  } finally {
    fs.rmSync(stateRoot, { recursive: true, force: true });
  }
});

test("the server refuses to start on oci without its engine, naming the check", async () => {
  const stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "wo-"));
  try {
    const config = parseConfig({
      STATE_ROOT: stateRoot,
      LOG_LEVEL: "silent",
      WARREN_PROVIDER: "oci",
      WARREN_OCI_SOCKET: path.join(stateRoot, "none.sock"),
    });
    await assert.rejects(createServer(config, { defaultMetrics: false }), /oci_engine/);
  } finally {
    fs.rmSync(stateRoot, { recursive: true, force: true });
  }
});

const socket = process.env.WARREN_OCI_SOCKET;
test(
  "an image that is not there: the check says how to build it",
  { skip: socket ? false : "needs an engine (WARREN_OCI_SOCKET; scripts/oci.sh service)" },
  async () => {
    const stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "wo-"));
    const p = new OciProvider({ stateRoot, socket: socket!, image: "warren-no-such-image:latest" });
    try {
      const probes = p.hostProbes();
      assert.equal((await probes.oci_engine!()).ok, true);
      const image = await probes.oci_image!();
      assert.equal(image.ok, false);
      assert.match(image.detail, /warren-no-such-image:latest is missing/);
      assert.match(image.fix, /scripts\/oci\.sh image/);
    } finally {
      fs.rmSync(stateRoot, { recursive: true, force: true });
    }
  },
);
