// The server's image (`make image`, scripts/image.sh), built and served from: a container of
// it serves on the oci provider against the host's engine (Podman's API socket, mounted in),
// answers /health and the API, runs an exec in a box the host's engine starts for it, and keeps
// its state across a restart on its volume (mounted at its own host path), the box adopted.
// Runs in scripts/test.sh's oci phase; its container, volume, boxes and socket service are
// removed whatever happens.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort } from "../support/serve.js";

const run = promisify(execFile);
const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const podmanHere = (() => {
  try {
    execFileSync("podman", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
const skip =
  process.env.WARREN_PROVIDER !== "oci"
    ? "the oci phase of scripts/test.sh runs it (WARREN_PROVIDER=oci)"
    : !podmanHere
      ? "podman is not installed (scripts/setup.sh installs it)"
      : process.getuid?.() !== 0
        ? "the oci provider needs root"
        : false;

const tag = `w${process.pid.toString(36)}`;
const image = `warren-image-test:${tag}`;
const container = `warren-image-test-${tag}`;
const volume = `warren-image-test-${tag}`;

describe("the server's image serves on the oci provider", { skip }, () => {
  let dir = "";
  let servicePid = 0;
  let base = "";
  let stateRoot = "";
  const podman = (...args: string[]) => run("podman", args, { maxBuffer: 16 << 20 });

  const healthy = async (ms: number) => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      const ok = await fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      const state = (await podman("inspect", "--format", "{{.State.Status}}", container)).stdout.trim();
      if (state !== "running") throw new Error(`the server's container is ${state}: ${await logs()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`no /health within ${ms} ms: ${await logs()}`);
  };
  const logs = () => podman("logs", "--tail", "40", container).then((r) => r.stdout + r.stderr, String);
  const call = async (method: string, url: string, body?: unknown) => {
    const r = await fetch(`${base}${url}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "warren-image-"));
    // the image, from this checkout (its Debian root is cached after the first build)
    await run(path.join(checkout, "scripts/image.sh"), [image], { cwd: checkout, maxBuffer: 16 << 20 });
    await run(path.join(checkout, "scripts/oci.sh"), ["image", "warren-box:latest"]);
    const service = await run(path.join(checkout, "scripts/oci.sh"), [
      "service",
      path.join(dir, "podman.sock"),
    ]);
    const [sock, pid] = service.stdout.trim().split(" ");
    servicePid = Number(pid);
    await podman("volume", "create", volume);
    // the engine binds the state's files into boxes by their host path: the volume is mounted
    // in the server's container at its own host path
    stateRoot = (await podman("volume", "inspect", "--format", "{{.Mountpoint}}", volume)).stdout.trim();
    // the OCI runtime that runs on this host (crun refuses hybrid cgroups)
    const runtime = (await run(path.join(checkout, "scripts/oci.sh"), ["runtime"])).stdout.trim();
    // limits a container may take here (the engine's own defaults may exceed what the host allows)
    const nofile = Math.min(65536, Number((await run("sh", ["-c", "ulimit -Hn"])).stdout.trim()) || 1024);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    await podman(
      "run", "-d", "--runtime", runtime, "--ulimit", `nofile=${nofile}:${nofile}`, "--ulimit", "nproc=8192:8192", "--name", container, "--network", "host", "--pid", "host", "--privileged",
      "--cgroupns", "host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup",
      "-v", `${sock}:/run/warren-oci/podman.sock`, "-v", `${volume}:${stateRoot}`,
      "-e", `STATE_ROOT=${stateRoot}`, "-e", "WARREN_PROVIDER=oci", "-e", "WARREN_OCI_IMAGE=warren-box:latest",
      "-e", "WARREN_HOST=127.0.0.1", "-e", `WARREN_PORT=${port}`, "-e", "WARREN_PREVIEW_PORT=0",
      ...(process.env.WARREN_OCI_RUNTIME ? ["-e", `WARREN_OCI_RUNTIME=${process.env.WARREN_OCI_RUNTIME}`] : []),
      image,
    ); // prettier-ignore
    await healthy(240_000);
  });

  after(async () => {
    await podman("rm", "-f", "-t", "5", container).catch(() => undefined);
    // the boxes this server made: their containers carry its organisation's label
    const boxes = org
      ? await podman("ps", "-aq", "--filter", "label=warren.provider=oci", "--filter", `label=warren.org=${org.id}`)
          .then((r) => r.stdout.split("\n").filter(Boolean), () => [] as string[]) // prettier-ignore
      : [];
    for (const b of boxes) await podman("rm", "-f", b).catch(() => undefined);
    await podman("volume", "rm", "-f", volume).catch(() => undefined);
    await podman("image", "rm", "-f", image).catch(() => undefined);
    if (servicePid) {
      try {
        process.kill(servicePid);
      } catch {
        // gone already
      }
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let org: { id: string } | undefined;
  let agent: { id: string };

  test("health, and the API on the image's server", async () => {
    assert.equal((await call("GET", "/health")).status, 200);
    const o = (await call("POST", "/api/orgs", { name: "imaged" })).body as { id: string };
    org = o;
    const machine = await call("POST", "/api/machines", { org_id: o.id, name: "m", memory_mib: 512 });
    assert.equal(machine.status, 201, JSON.stringify(machine.body));
    const a = await call("POST", "/api/agents", { org_id: o.id, machine_id: machine.body.id, name: "a" });
    assert.equal(a.status, 201, JSON.stringify(a.body));
    agent = a.body;
  });

  // the state volume's host path is deep (the engine's volumes folder): boxd's socket there is
  // longer than a unix address holds, and the client reaches it through its folder
  test("an exec in a box of the host's engine", async () => {
    assert.ok(
      Buffer.byteLength(path.join(stateRoot, "run/oci-boxes/mch_0123456789abcdef/boxd/boxd.sock")) > 107,
    );
    const r = await call("POST", `/api/agents/${agent.id}/exec`, { command: "echo from-the-image" });
    assert.equal(r.status, 200, `${JSON.stringify(r.body)}\n${await logs()}`);
    assert.equal(r.body.stdout, "from-the-image\n");
    // the box is a container of the host's engine, beside the server's own
    const boxes = await podman(
      "ps",
      "-q",
      "--filter",
      "label=warren.provider=oci",
      "--filter",
      `label=warren.org=${org?.id}`,
    );
    assert.ok(boxes.stdout.trim() !== "", "no box container of this organisation on the host's engine");
  });

  test("a restart keeps the state on its volume", async () => {
    await podman("restart", "-t", "30", container);
    await healthy(240_000);
    const orgs = await call("GET", "/api/orgs");
    assert.ok(
      orgs.body.items.some((o: { id: string }) => o.id === org?.id),
      JSON.stringify(orgs.body),
    );
    const agents = await call("GET", `/api/agents/${agent.id}`);
    assert.equal(agents.status, 200, JSON.stringify(agents.body));
    // the box kept running across the restart (its boxd the old copy on the volume) and answers
    const r = await call("POST", `/api/agents/${agent.id}/exec`, { command: "echo after-the-restart" });
    assert.equal(r.status, 200, `${JSON.stringify(r.body)}\n${await logs()}`);
    assert.equal(r.body.stdout, "after-the-restart\n");
  });
});
