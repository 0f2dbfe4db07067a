// Images of one's own and the image kind. On oci (scripts/test.sh's oci phase): an image built
// here from the cached Debian base (warren-base, scripts/image.sh; a small layer added, no
// root made again) is a machine's image; a command runs inside it (a file only the image has,
// the box's walls unchanged), and an image-kind agent's run starts the image's entrypoint with
// its input at /agent/input and answers what it printed. On local: an image is refused by
// name, and an image-kind agent's run says why. Every container of the test's organisation
// and the image are removed whatever happens. On any provider, a host without a GPU refuses
// a machine's `gpu` when it is saved.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { gpuDevices } from "../../src/boxes/index.js";
import { boxSkipReason } from "../box/fixture.js";
import { runAgent } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";

const run = promisify(execFile);
const podman = (...args: string[]) => run("podman", args, { maxBuffer: 16 << 20 });
const onOci = process.env.WARREN_PROVIDER === "oci";
const arch = process.arch === "x64" ? "amd64" : process.arch;
const base = `localhost/warren-base:bookworm-${arch}`;
const tarball = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"),
  "warren",
  `debian-bookworm-${arch}.tar`,
);
const baseThere = (() => {
  try {
    execFileSync("podman", ["image", "exists", base], { stdio: "ignore" });
    return true;
  } catch {
    try {
      execFileSync("test", ["-f", tarball]);
      return true;
    } catch {
      return false;
    }
  }
})();

/** Makes an organisation, a machine (with `image` when given) and an image-kind agent on it. */
async function setUp(t: TestServer, image?: string) {
  const org = (await t.call("POST", "/api/orgs", { name: `img-${process.pid}` })).body.id as string;
  const m = await t.call("POST", "/api/machines", { org_id: org, name: "m", ...(image ? { image } : {}) });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  const a = await t.call("POST", "/api/agents", {
    org_id: org,
    machine_id: m.body.id,
    name: "img",
    kind: "image",
    // the model the entrypoint may call through the run's gateway (this one never answers: not called)
    model: { provider: "openai-compatible", name: "none", base_url: "http://127.0.0.1:9/v1" },
    limits: { max_run_s: 60, on_limit: "stop" },
  });
  assert.equal(a.status, 201, JSON.stringify(a.body));
  return { org, machine: m.body.id as string, agent: a.body.id as string };
}

const ociSkip = !onOci
  ? "the oci phase of scripts/test.sh runs it (WARREN_PROVIDER=oci)"
  : (boxSkipReason() ?? (baseThere ? false : `no ${base} nor its cached root (scripts/image.sh makes them)`));

describe("a machine's own image on oci, and the image kind", { skip: ociSkip }, () => {
  const tag = `w${process.pid.toString(36)}`;
  const image = `localhost/warren-image-kind-test:${tag}`;
  let dir = "";
  let t: TestServer;
  let ids: Awaited<ReturnType<typeof setUp>> | undefined;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "warren-image-kind-"));
    if (
      !(await podman("image", "exists", base).then(
        () => true,
        () => false,
      ))
    )
      await podman("import", tarball, base);
    // the entrypoint: reads the run's input, prints its answer (and one line on stderr)
    writeFileSync(
      path.join(dir, "answer"),
      '#!/bin/sh\nset -e\nprintf "answer from the image to: %s; user %s\\n" "$(cat /agent/input)" "$(id -u)"\n' +
        'cat /usr/share/only-in-image\necho "a line on stderr" >&2\n',
    );
    chmodSync(path.join(dir, "answer"), 0o755);
    writeFileSync(path.join(dir, "only-in-image"), "the image's own file\n");
    writeFileSync(
      path.join(dir, "Containerfile"),
      `FROM ${base}\nCOPY answer /usr/local/bin/answer\nCOPY only-in-image /usr/share/only-in-image\n` +
        `ENTRYPOINT ["/usr/local/bin/answer"]\n`,
    );
    await podman("build", "--network", "none", "-q", "-t", image, dir);
    t = await startTestServer();
  });

  after(async () => {
    try {
      if (ids) {
        const left = (await podman("ps", "-aq", "--filter", `label=warren.org=${ids.org}`)).stdout.trim();
        if (left) await podman("rm", "-f", "-t", "0", ...left.split("\n"));
      }
    } finally {
      await t?.close();
      await podman("rmi", "-f", image).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a command runs inside the machine's image, within the same walls", async () => {
    ids = await setUp(t, image);
    const r = await t.call("POST", `/api/agents/${ids.agent}/exec`, {
      command:
        "cat /usr/share/only-in-image; id -u; touch /usr/x 2>/dev/null && echo writable || echo read-only; grep CapEff /proc/self/status",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.exit_code, 0, r.body.stderr);
    const [file, uid, root, caps] = (r.body.stdout as string).trim().split("\n");
    assert.equal(file, "the image's own file");
    assert.notEqual(uid, "0", "the agent's own user, not root");
    assert.equal(root, "read-only");
    assert.match(caps ?? "", /CapEff:\s+0+$/, "no capability");
    const inspected = (
      await podman("ps", "-a", "--filter", `label=warren.org=${ids.org}`, "--format", "{{.Image}}")
    ).stdout;
    assert.match(inspected, /warren-image-kind-test/);
  });

  test("an image-kind run starts the entrypoint with its input at /agent/input; its stdout is the output", async () => {
    assert.ok(ids);
    const { run: r, events } = await runAgent(t, ids.agent, "what is in the box?", { timeoutMs: 120_000 });
    assert.equal(r.status, "succeeded", JSON.stringify(events).slice(0, 3000));
    assert.match(r.output, /^answer from the image to: what is in the box\?; user \d+\n/);
    assert.match(r.output, /the image's own file/);
    assert.doesNotMatch(r.output, /stderr/, "stderr is the trace's, not the output");
    const image_ = events.find((e) => e.type === "image");
    assert.deepEqual(image_?.data?.argv, ["/usr/local/bin/answer"]);
    const stderr = events
      .filter((e) => e.type === "output" && e.data.stream === "stderr")
      .map((e) => e.data.data as string)
      .join("");
    assert.match(stderr, /a line on stderr/, "stderr goes to the trace");
  });
});

const localSkip = onOci ? "the local provider's refusal (the default phase)" : (boxSkipReason() ?? false);

describe("on local, an image is refused by name", { skip: localSkip }, () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(async () => {
    await t?.close();
  });

  test("a machine naming an image, and an image-kind agent's run, say why", async () => {
    const refused = await t.call("POST", "/api/machines", {
      org_id: (await t.call("POST", "/api/orgs", { name: "local-img" })).body.id,
      name: "m",
      image: "localhost/tools:1",
    });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "machine.capability_unavailable");
    assert.match(refused.body.error.message, /oci or kubernetes/);
    const ids = await setUp(t);
    const { run: r } = await runAgent(t, ids.agent, "hello");
    assert.equal(r.status, "failed");
    assert.match(
      r.status_reason ?? r.reason ?? JSON.stringify(r),
      /image-kind agent runs its machine's own image/,
    );
  });
});

describe(
  "gpu on a host without one",
  { skip: gpuDevices().length > 0 ? "this host has a GPU" : false },
  () => {
    test("is refused when the machine is saved, made or changed, by name", async () => {
      const t = await startTestServer();
      try {
        const org = (await t.call("POST", "/api/orgs", { name: "gpu-less" })).body.id as string;
        const made = await t.call("POST", "/api/machines", { org_id: org, name: "g", gpu: true });
        assert.equal(made.status, 400, JSON.stringify(made.body));
        assert.equal(made.body.error.code, "machine.capability_unavailable");
        assert.match(made.body.error.message, /no GPU device/);
        const m = await t.call("POST", "/api/machines", { org_id: org, name: "m" });
        const patched = await t.call("PATCH", `/api/machines/${m.body.id}`, { gpu: true });
        assert.equal(patched.status, 400, JSON.stringify(patched.body));
        assert.equal(patched.body.error.code, "machine.capability_unavailable");
        assert.equal((await t.call("GET", `/api/machines/${m.body.id}`)).body.gpu, false);
      } finally {
        await t.close();
      }
    });
  },
);
