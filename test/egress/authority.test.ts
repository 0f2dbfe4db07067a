// The machines' interception authorities (src/egress/authority.ts), on the server's store:
// one per machine, made once and read back by any server of the same store, its key sealed
// under the master key (no plaintext in the store, and another key opens nothing); a host's
// certificate is valid for that host alone and chains only to its own machine's authority,
// in a real TLS handshake too; the machine's folder gets the certificate and a bundle, never
// the key. No box is started.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { Authorities } from "../../src/egress/authority.js";
import { hostCertificate } from "../../src/egress/x509.js";
import { open, seal } from "../../src/secrets/crypto.js";
import { schema } from "../../src/store/index.js";
import { orgAndMachine } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const sealerOf = (key: Buffer) => ({
  seal: (id: string, v: Buffer) => seal(key, id, v),
  open: (id: string, sealed: string) => open(key, id, sealed),
});

describe("the machines' interception authorities", () => {
  let t: TestServer;
  let dir: string;
  let m1: string;
  let m2: string;
  const key = crypto.randomBytes(32);
  let authorities: Authorities;

  before(async () => {
    t = await startTestServer();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "warren-authorities-"));
    const made = await orgAndMachine((m, u, b) => t.call(m, u, b), "cas");
    m1 = made.machine.id;
    m2 = (await t.call("POST", "/api/machines", { org_id: made.org.id, name: "m2" })).body.id;
    authorities = new Authorities({
      db: t.server.store.db,
      sealer: sealerOf(key),
      homes: { machineDir: (id) => path.join(dir, id) },
    });
  });
  after(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test("one authority per machine, made once, its key sealed in the store", async () => {
    const [a1, a2] = await Promise.all([authorities.authority(m1), authorities.authority(m2)]);
    assert.notEqual(a1.cert, a2.cert);
    assert.notEqual(a1.key, a2.key);
    const x1 = new crypto.X509Certificate(a1.cert);
    assert.ok(x1.ca, "a certificate authority");
    assert.match(x1.subject, new RegExp(`warren egress authority ${m1}`));
    assert.ok(x1.checkPrivateKey(crypto.createPrivateKey(a1.key)));
    // stored sealed: no line of the key's PEM in the row
    const [row] = await t.server.store.db
      .select()
      .from(schema.egressAuthorities)
      .where(eq(schema.egressAuthorities.machineId, m1));
    assert.ok(row);
    assert.equal(row.cert, a1.cert);
    for (const line of a1.key.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----")))
      assert.ok(!row.sealedKey.includes(line), "the key is not in the store as it is");
    // another server of the same store reads the same authority; another master key opens nothing
    const again = new Authorities({
      db: t.server.store.db,
      sealer: sealerOf(key),
      homes: { machineDir: (id) => path.join(dir, id) },
    });
    assert.deepEqual(await again.authority(m1), a1);
    const stranger = new Authorities({
      db: t.server.store.db,
      sealer: sealerOf(crypto.randomBytes(32)),
      homes: { machineDir: (id) => path.join(dir, id) },
    });
    await assert.rejects(stranger.authority(m1));
  });

  test("a host's certificate names that host alone and chains only to its machine's authority", async () => {
    const [a1, a2] = await Promise.all([authorities.authority(m1), authorities.authority(m2)]);
    const leaf = new crypto.X509Certificate(hostCertificate(a1, "api.example.com", null).cert);
    assert.equal(leaf.ca, false);
    assert.equal(leaf.checkHost("api.example.com"), "api.example.com");
    for (const other of ["pkg.test", "www.api.example.com", "example.com"])
      assert.equal(leaf.checkHost(other), undefined, other);
    assert.ok(leaf.verify(new crypto.X509Certificate(a1.cert).publicKey));
    assert.ok(!leaf.verify(new crypto.X509Certificate(a2.cert).publicKey));
    const byIp = new crypto.X509Certificate(hostCertificate(a1, "10.1.2.3", [10, 1, 2, 3]).cert);
    assert.equal(byIp.checkIP("10.1.2.3"), "10.1.2.3");
    assert.equal(byIp.checkIP("10.1.2.4"), undefined);

    // a TLS client trusting machine 1's authority accepts the proxy's answer for the host it
    // asked; trusting machine 2's, or asking another name, it refuses
    const context = await authorities.context(m1, "api.example.com", null);
    const server = tls.createServer({ SNICallback: (_name, cb) => cb(null, context) }, (s) => s.end("ok"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const hello = (ca: string, servername: string) =>
      new Promise<string>((resolve, reject) => {
        const c = tls.connect({ host: "127.0.0.1", port, ca, servername }, () => {
          let got = "";
          c.on("data", (d: Buffer) => (got += d.toString()));
          c.on("end", () => resolve(got));
        });
        c.on("error", reject);
      });
    try {
      assert.equal(await hello(a1.cert, "api.example.com"), "ok");
      await assert.rejects(hello(a2.cert, "api.example.com"), /certificate|signature|issuer/i);
      await assert.rejects(hello(a1.cert, "pkg.test"), /altnames|Hostname/i);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  test("the machine's folder gets the certificate and a bundle with it, root's and read-only, never the key", async () => {
    const a1 = await authorities.authority(m1);
    const env = await authorities.boxEnv(m1);
    assert.match(env.SSL_CERT_FILE ?? "", /\/ca-bundle\.pem$/);
    assert.equal(env.CURL_CA_BUNDLE, env.SSL_CERT_FILE);
    assert.match(env.NODE_EXTRA_CA_CERTS ?? "", /\/authority\.pem$/);
    const folder = path.join(dir, m1, path.basename(path.dirname(env.NODE_EXTRA_CA_CERTS ?? "")));
    const files = fs.readdirSync(folder).sort();
    assert.deepEqual(files, ["authority.pem", "ca-bundle.pem"]);
    assert.equal(fs.readFileSync(path.join(folder, "authority.pem"), "utf8"), a1.cert);
    assert.ok(fs.readFileSync(path.join(folder, "ca-bundle.pem"), "utf8").endsWith(`${a1.cert.trimEnd()}\n`));
    const keyBody = a1.key.split("\n")[1] ?? "";
    assert.ok(keyBody.length > 20);
    for (const f of files) {
      const st = fs.statSync(path.join(folder, f));
      assert.equal(st.uid, 0);
      assert.equal(st.mode & 0o777, 0o644, f);
      assert.ok(!fs.readFileSync(path.join(folder, f), "utf8").includes(keyBody), `${f} holds no key`);
    }
    assert.ok(!fs.existsSync(path.join(dir, m2)), "another machine's folder is not written");
  });
});
