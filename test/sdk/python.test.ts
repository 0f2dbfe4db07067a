// The Python SDK (sdk/python) is what scripts/python-sdk.ts makes of docs/openapi.json, its
// wheel builds with Debian's setuptools, and the built wheel imports with every operation.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { stalePythonFiles } from "../../scripts/python-sdk.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const PYTHON = "/usr/bin/python3";
const run = promisify(execFile);
const env = { PATH: "/usr/bin:/bin", HOME: process.env.HOME ?? "/root", PYTHONDONTWRITEBYTECODE: "1" };

test("the generated files of the Python SDK are current with docs/openapi.json", async () => {
  assert.deepEqual(
    await stalePythonFiles(),
    [],
    "run `node --import tsx scripts/python-sdk.ts` and commit sdk/python/warren",
  );
});

test("sdk/python builds a wheel that imports with the operations and models", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "warren-wheel-"));
  try {
    // built from a copy: setuptools writes build/ and *.egg-info beside the sources
    const src = path.join(dir, "src");
    await cp(path.join(root, "sdk/python"), src, {
      recursive: true,
      filter: (p) => !/(__pycache__|\.egg-info|\/build)$/.test(p),
    });
    const out = path.join(dir, "out");
    await run(PYTHON, ["-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, src], {
      env,
      timeout: 300_000,
    });
    const wheels = (await readdir(out)).filter((f) => f.endsWith(".whl"));
    assert.equal(wheels.length, 1, `one wheel: ${wheels.join(", ")}`);
    // the wheel alone on the path (a wheel is a zip Python imports from)
    const { stdout } = await run(
      PYTHON,
      [
        "-c",
        [
          "import warren, typing",
          "assert warren.__file__.startswith(" + JSON.stringify(path.join(out, wheels[0]!)) + ")",
          "c = warren.Client('http://127.0.0.1:9')",
          "print(callable(c.agents.exec), callable(c.conversations.events), callable(c.runs.wait))",
          "print(typing.get_type_hints(warren.models.Run)['status'])",
          "print('access.denied' in warren.API_ERROR_CODES)",
        ].join("\n"),
      ],
      { env: { ...env, PYTHONPATH: path.join(out, wheels[0]!) }, cwd: dir },
    );
    assert.deepEqual(stdout.trim().split("\n"), [
      "True True True",
      "typing.Literal['queued', 'running', 'waiting', 'succeeded', 'failed', 'timed_out', 'cancelled', 'lost']",
      "True",
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
