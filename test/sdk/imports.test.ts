// warren/sdk depends on nothing the server needs: importing the built package loads only
// its own files and Node's built-ins (no Fastify, PGlite, pg, Drizzle, not even zod).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

test("importing warren/sdk loads only the SDK's own modules", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "warren-sdk-imports-"));
  try {
    const log = path.join(dir, "loaded.txt");
    const hooks = path.join(dir, "hooks.mjs");
    await writeFile(
      hooks,
      `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(${JSON.stringify(log)}, r.url + "\\n");
  return r;
}`,
    );
    const register = path.join(dir, "register.mjs");
    await writeFile(
      register,
      `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});`,
    );
    const entry = path.join(root, "dist/sdk/index.js");
    await promisify(execFile)(process.execPath, [
      "--import",
      register,
      "--input-type=module",
      "-e",
      `const sdk = await import(${JSON.stringify(pathToFileURL(entry).href)}); if (typeof sdk.WarrenClient !== "function") process.exit(3);`,
    ]);
    const loaded = (await readFile(log, "utf8")).split("\n").filter(Boolean);
    const sdkDir = pathToFileURL(path.join(root, "dist/sdk/")).href;
    assert.ok(loaded.includes(pathToFileURL(entry).href), "the SDK's entry was loaded");
    const outside = loaded.filter((u) => !u.startsWith("node:") && !u.startsWith(sdkDir));
    assert.deepEqual(outside, [], `the SDK loaded modules outside dist/sdk: ${outside.join(", ")}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
