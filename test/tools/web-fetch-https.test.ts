// web_fetch over HTTPS: a CONNECT tunnel through the egress proxy, then TLS to the upstream,
// verified against a certificate the child process trusts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startUpstreams, TEST_NAMES, type Upstreams } from "../egress/upstreams.js";

const here = path.dirname(fileURLToPath(import.meta.url));

describe("web_fetch over HTTPS", { skip: boxSkipReason() ?? false }, () => {
  let up: Upstreams;
  let dir: string;
  before(async () => {
    up = await startUpstreams();
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "warren-https-"));
  });
  after(async () => {
    await up?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  const fetchIn = async (env: NodeJS.ProcessEnv): Promise<string> => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", path.join(here, "web-fetch-https.ts"), String(up.httpsPort), ...TEST_NAMES],
      { env, timeout: 120_000 },
    );
    return (JSON.parse(stdout) as { output: string }).output;
  };

  test("gets the page through the tunnel, the certificate verified", async () => {
    const ca = path.join(dir, "ca.pem");
    await fs.writeFile(ca, up.ca);
    const output = await fetchIn({ ...process.env, NODE_EXTRA_CA_CERTS: ca });
    assert.match(output, /^status 200\n/);
    assert.match(output, new RegExp(`hello from pkg.test:${up.httpsPort}`));
    // a certificate nobody trusts is a failed call, not a page
    const { NODE_EXTRA_CA_CERTS: _none, ...without } = process.env;
    const untrusted = await fetchIn(without);
    assert.match(untrusted, /^the call failed: .*certificate/i);
  });
});
