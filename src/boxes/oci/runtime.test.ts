// The OCI runtime's choice: WARREN_OCI_RUNTIME parsed, the candidates' order, crun's refusal
// of hybrid cgroups read, and the whole trial against a fake engine that answers as Podman's
// service does here (it runs its own runtime whatever a container asks; crun refuses the
// host); the boot check and `warren doctor` name the runtime, or refuse with the fix.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ConfigError, parseConfig } from "../../config/index.js";
import { doctor } from "../../main.js";
import { OciProvider } from "./provider.js";
import {
  choiceFix,
  chooseRuntime,
  describeChoice,
  explainStartFailure,
  readEngineRuntimes,
  readRuntimeFailure,
  runtimeCandidates,
} from "./runtime.js";
import { Engine } from "./engine.js";

/** crun 1.8's answer on a hybrid host, as Podman's service relays it. */
const HYBRID =
  "crun: cgroups in hybrid mode not supported, drop all controllers from cgroupv2: OCI runtime error";

test("WARREN_OCI_RUNTIME: runc, crun, or unset or empty for the first the host can run", () => {
  const runtime = (v: string | undefined) =>
    parseConfig({ STATE_ROOT: "/tmp/x", WARREN_OCI_RUNTIME: v }).WARREN_OCI_RUNTIME;
  assert.equal(runtime("runc"), "runc");
  assert.equal(runtime("crun"), "crun");
  assert.equal(runtime(""), undefined);
  assert.equal(runtime(undefined), undefined);
  assert.throws(
    () => runtime("youki"),
    (err: Error) =>
      err instanceof ConfigError &&
      /WARREN_OCI_RUNTIME must be one of runc, crun, or empty/.test(err.message),
  );
  assert.throws(() => runtime("RUNC"), ConfigError);
});

test("the candidates: the one wanted alone, else the engine's default, then runc and crun", () => {
  const engine = readEngineRuntimes({
    DefaultRuntime: "crun",
    Runtimes: { crun: { path: "/usr/bin/crun" }, runc: { path: "/usr/bin/runc" }, kata: {} },
  });
  assert.deepEqual(engine, { default: "crun", offered: ["crun", "runc", "kata"] });
  assert.deepEqual(runtimeCandidates(undefined, engine), ["crun", "runc"]);
  assert.deepEqual(runtimeCandidates("runc", engine), ["runc"]);
  assert.deepEqual(runtimeCandidates(undefined, { default: "runsc", offered: [] }), [
    "runsc",
    "runc",
    "crun",
  ]);
  assert.deepEqual(runtimeCandidates(undefined, readEngineRuntimes(null)), ["runc", "crun"]);
  assert.deepEqual(readEngineRuntimes({ DefaultRuntime: "" }), { default: null, offered: [] });
});

test("a runtime's failure, read: crun's hybrid cgroups, a runtime the engine lacks, anything else", () => {
  assert.equal(readRuntimeFailure(HYBRID).kind, "hybrid-cgroups");
  assert.equal(
    readRuntimeFailure(
      "Error: OCI runtime error: crun: cgroups in hybrid mode not supported, drop all controllers",
    ).kind,
    "hybrid-cgroups",
  );
  assert.match(readRuntimeFailure(HYBRID).reason, /hybrid cgroups/);
  assert.equal(readRuntimeFailure("unknown or invalid runtime name: crun").kind, "unknown-runtime");
  assert.equal(readRuntimeFailure('OCI runtime "krun" not found: invalid argument').kind, "unknown-runtime");
  const other = readRuntimeFailure(`setrlimit RLIMIT_NPROC: Operation not permitted\n${"x".repeat(400)}`);
  assert.equal(other.kind, "other");
  assert.ok(other.reason.startsWith("setrlimit RLIMIT_NPROC: Operation not permitted x"));
  assert.ok(other.reason.length <= 300);
  assert.equal(readRuntimeFailure("").reason, "no reason given");
  // a box's start that failed so: the fix said with it
  assert.match(
    explainStartFailure(`box m did not start: the container engine refused ...: 500 ${HYBRID}`) ?? "",
    /set WARREN_OCI_RUNTIME=runc and start the service with `scripts\/oci\.sh service`/,
  );
  assert.equal(explainStartFailure("boxd did not answer within 20000 ms"), null);
});

test("the choice in one line, and the fix when none runs a box", () => {
  const refused = {
    runtime: null,
    wanted: undefined,
    engineDefault: "crun",
    trials: [
      {
        runtime: "crun",
        ok: false,
        used: "crun",
        kind: "hybrid-cgroups" as const,
        reason: readRuntimeFailure(HYBRID).reason,
      },
      {
        runtime: "runc",
        ok: false,
        used: "crun",
        kind: "ignored" as const,
        reason: "the engine runs its own crun",
      },
    ],
  };
  assert.match(
    describeChoice(refused),
    /^no OCI runtime runs a box here \(crun: .*hybrid cgroups.*; runc: the engine runs its own crun\)$/,
  );
  assert.equal(
    choiceFix(refused),
    "set WARREN_OCI_RUNTIME=runc and start the service with `scripts/oci.sh service` (it starts Podman's service with runc)",
  );
  const chosen = {
    runtime: "runc",
    wanted: undefined,
    engineDefault: "crun",
    trials: [refused.trials[0]!, { runtime: "runc", ok: true, used: "runc", reason: "ran a container" }],
  };
  assert.match(describeChoice(chosen), /^runc runs a box; crun: it refuses this host's hybrid cgroups/);
  assert.equal(
    describeChoice({ ...chosen, engineDefault: "runc", trials: [chosen.trials[1]!] }),
    "runc (the engine's default) runs a box",
  );
  assert.equal(
    describeChoice({ ...chosen, wanted: "runc" as const, trials: [chosen.trials[1]!] }),
    "runc (WARREN_OCI_RUNTIME) runs a box",
  );
  const untried = {
    runtime: null,
    wanted: undefined,
    engineDefault: null,
    trials: [],
    untried: "the image x is missing",
  };
  assert.equal(describeChoice(untried), "not tried: the image x is missing");
  assert.match(choiceFix(untried), /scripts\/oci\.sh image/);
});

/**
 * An engine that answers as Podman's compatible service does on a hybrid-cgroup host: every
 * container runs with `own` whatever HostConfig.Runtime asks; crun's start fails.
 */
function fakeEngine(socket: string, own: "crun" | "runc") {
  const containers = new Map<string, { runtime: string }>();
  const asked: string[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://d");
      const p = url.pathname.replace(/^\/v1\.41/, "");
      const send = (status: number, value?: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(value === undefined ? "" : JSON.stringify(value));
      };
      let m: RegExpMatchArray | null;
      if (p === "/_ping") return res.end("OK");
      if (p === "/info")
        return send(200, { DefaultRuntime: own, Runtimes: { crun: {}, runc: {}, kata: {} } });
      if (p.startsWith("/images/")) return send(200, { Id: "sha256:x" });
      if (p === "/containers/create" && req.method === "POST") {
        asked.push((JSON.parse(body) as { HostConfig: { Runtime: string } }).HostConfig.Runtime);
        containers.set(url.searchParams.get("name")!, { runtime: own });
        return send(201, { Id: "x", Warnings: [] });
      }
      if ((m = /^\/containers\/([^/]+)\/json$/.exec(p)))
        return containers.has(m[1]!)
          ? send(200, { HostConfig: { Runtime: "oci" } })
          : send(404, { message: "no such container" });
      if ((m = /^\/libpod\/containers\/([^/]+)\/json$/.exec(p))) {
        const c = containers.get(m[1]!);
        return c ? send(200, { OCIRuntime: c.runtime }) : send(404, { message: "no such container" });
      }
      if ((m = /^\/containers\/([^/]+)\/start$/.exec(p)))
        return containers.get(m[1]!)?.runtime === "crun"
          ? send(500, { cause: "OCI runtime error", message: HYBRID, response: 500 })
          : send(204);
      if ((m = /^\/containers\/([^/]+)\/wait$/.exec(p))) return send(200, { StatusCode: 0, Error: null });
      if ((m = /^\/containers\/([^/?]+)$/.exec(p)) && req.method === "DELETE") {
        containers.delete(m[1]!);
        return send(204);
      }
      send(404, { message: `not here: ${req.method} ${p}` });
    });
  });
  return {
    containers,
    asked,
    listen: () => new Promise<void>((r) => server.listen(socket, r)),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe("against an engine that runs its own runtime (Podman's service)", () => {
  let dir: string;
  let crun: ReturnType<typeof fakeEngine>;
  let runc: ReturnType<typeof fakeEngine>;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "wo-rt-"));
    crun = fakeEngine(path.join(dir, "crun.sock"), "crun");
    runc = fakeEngine(path.join(dir, "runc.sock"), "runc");
    await crun.listen();
    await runc.listen();
  });
  after(async () => {
    await crun.close();
    await runc.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("started with crun: crun refuses the host, runc is not what the engine runs; every probe removed", async () => {
    const c = await chooseRuntime(new Engine(path.join(dir, "crun.sock")), "warren-box:latest", undefined);
    assert.equal(c.runtime, null);
    assert.equal(c.engineDefault, "crun");
    assert.deepEqual(
      c.trials.map((t) => [t.runtime, t.ok, t.kind, t.used]),
      [
        ["crun", false, "hybrid-cgroups", "crun"],
        ["runc", false, "ignored", "crun"],
      ],
    );
    assert.deepEqual(crun.asked.slice(-2), ["crun", "runc"], "each asked for by name");
    assert.equal(crun.containers.size, 0);
  });

  test("started with runc: runc, the engine's default, runs a box", async () => {
    const c = await chooseRuntime(new Engine(path.join(dir, "runc.sock")), "warren-box:latest", undefined);
    assert.equal(c.runtime, "runc");
    assert.equal(describeChoice(c), "runc (the engine's default) runs a box");
    assert.equal(runc.containers.size, 0);
  });

  test("the boot check names the runtime, or refuses with the fix in one line", async () => {
    const stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "wo-rt-"));
    try {
      for (const [sock, ok] of [
        ["runc.sock", true],
        ["crun.sock", false],
      ] as const) {
        const p = new OciProvider({ stateRoot, socket: path.join(dir, sock), image: "warren-box:latest" });
        const r = await p.hostProbes().oci_runtime!();
        assert.equal(r.ok, ok, r.detail);
        if (ok) assert.match(r.detail, /^runc \(the engine's default\) runs a box/);
        else {
          assert.match(r.detail, /crun: it refuses this host's hybrid cgroups/);
          assert.match(
            r.fix,
            /^set WARREN_OCI_RUNTIME=runc and start the service with `scripts\/oci\.sh service`/,
          );
        }
      }
      // the one wanted, and the engine runs another: the fix is to start the service with it
      const wanted = new OciProvider({
        stateRoot,
        socket: path.join(dir, "runc.sock"),
        image: "warren-box:latest",
        runtime: "crun",
      });
      const r = await wanted.hostProbes().oci_runtime!();
      assert.equal(r.ok, false);
      assert.match(r.detail, /crun: the engine runs its own runc/);
      assert.match(r.fix, /WARREN_OCI_RUNTIME=crun/);
    } finally {
      fs.rmSync(stateRoot, { recursive: true, force: true });
    }
  });

  test("a box is refused with the fix when no runtime runs one", async () => {
    const stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "wo-rt-"));
    const p = new OciProvider({ stateRoot, socket: path.join(dir, "crun.sock"), image: "warren-box:latest" });
    try {
      await p.create({
        id: "nort",
        labels: {
          "warren.kind": "machine",
          "warren.org": "o",
          "warren.machine": "nort",
          "warren.provider": "oci",
        },
        mounts: [],
        limits: { memoryMib: 64, cpus: 1, pids: 64, tmpMib: 8 },
      });
      await assert.rejects(p.start("nort"), (err: Error & { code?: string }) => {
        assert.equal(err.code, "box.unavailable");
        assert.match(err.message, /hybrid cgroups.*fix: set WARREN_OCI_RUNTIME=runc/);
        return true;
      });
    } finally {
      fs.rmSync(stateRoot, { recursive: true, force: true });
    }
  });

  test("warren doctor names the runtime: the check on oci, a line of its own on local", async () => {
    const stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "wo-rt-"));
    try {
      const run = async (env: Record<string, string>) => {
        let text = "";
        const code = await doctor({ STATE_ROOT: stateRoot, LOG_LEVEL: "silent", ...env }, async (t) => {
          text += t;
        });
        return { code, text };
      };
      const oci = await run({ WARREN_PROVIDER: "oci", WARREN_OCI_SOCKET: path.join(dir, "runc.sock") });
      assert.match(oci.text, /^ok +oci_runtime +runc \(the engine's default\) runs a box$/m);
      const refused = await run({ WARREN_PROVIDER: "oci", WARREN_OCI_SOCKET: path.join(dir, "crun.sock") });
      assert.equal(refused.code, 1);
      assert.match(refused.text, /^MISSING +oci_runtime +no OCI runtime runs a box here \(crun: /m);
      assert.match(
        refused.text,
        /fix: set WARREN_OCI_RUNTIME=runc and start the service with `scripts\/oci\.sh service`/,
      );
      assert.match(refused.text, /would refuse to start: oci_runtime/);
      const local = await run({ WARREN_PROVIDER: "local", WARREN_OCI_SOCKET: path.join(dir, "runc.sock") });
      assert.match(
        local.text,
        /^oci runtime \(WARREN_PROVIDER=oci\): runc \(the engine's default\) runs a box \(the engine at .*runc\.sock\)$/m,
      );
    } finally {
      fs.rmSync(stateRoot, { recursive: true, force: true });
    }
  });
});
