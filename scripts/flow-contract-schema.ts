// Writes docs/flow-contract.schema.json, the published JSON Schema of a flow contract file,
// from the schema that validates them (src/contract/flow-contract.ts). A test fails when the
// checked-in copy is stale.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { flowContractJsonSchema } from "../src/contract/flow-contract.js";

export const schemaPath = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../docs/flow-contract.schema.json",
);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(schemaPath, flowContractJsonSchema());
  console.log(`wrote ${schemaPath}`);
}
