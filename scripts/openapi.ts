// Writes docs/openapi.json from a running server's document (the same zod schemas that
// validate requests). `make test` fails when the checked-in copy is stale.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseConfig } from "../src/config/index.js";
import { createServer } from "../src/server.js";
import { writePythonSdk } from "./python-sdk.js";

export async function currentDocument(): Promise<string> {
  const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-openapi-"));
  try {
    const s = await createServer(parseConfig({ STATE_ROOT: stateRoot, LOG_LEVEL: "silent" }), {
      defaultMetrics: false,
    });
    try {
      const r = await s.app.inject({ url: "/api/openapi.json" });
      return `${JSON.stringify(r.json(), null, 2)}\n`;
    } finally {
      await s.close();
    }
  } finally {
    await rm(stateRoot, { recursive: true, force: true });
  }
}

export const documentPath = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../docs/openapi.json",
);

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const document = await currentDocument();
  await writeFile(documentPath, document);
  console.log(`wrote ${documentPath}`);
  // the Python SDK's operations and models are made from the document: kept current with it
  await writePythonSdk(JSON.parse(document));
  console.log("wrote sdk/python/warren (scripts/python-sdk.ts)");
}
