import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { createLogger } from "./log.js";

test("secret-bearing fields never reach the log", () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  const log = createLogger("info", sink);
  log.info(
    {
      value: "s3cr3t-1",
      secret: { value: "s3cr3t-2" },
      req: { headers: { authorization: "Bearer s3cr3t-3", host: "h" } },
      exec: { env: { KEY: "s3cr3t-4" } },
      DATABASE_URL: "postgres://u:s3cr3t-5@h/db",
    },
    "hello",
  );
  const text = lines.join("");
  assert.match(text, /hello/);
  assert.match(text, /"host":"h"/);
  assert.doesNotMatch(text, /s3cr3t/);
});
