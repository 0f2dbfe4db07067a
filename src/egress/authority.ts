// The interception authorities: one certificate authority per machine, made the first time
// one of its agents has a secret of use egress. Its key is sealed under the master key in
// the store and opened only in the server; its certificate is written into the machine's
// folder (seen in the box at /home/.warren, read-only to agents) with a bundle of the
// public authorities beside it, and the commands of an agent with such a secret are pointed
// at them (SSL_CERT_FILE and the like). The proxy signs with it a certificate for a host
// only when a connection to that host is intercepted (src/egress/inject.ts).
import fs from "node:fs";
import path from "node:path";
import tls from "node:tls";
import { eq } from "drizzle-orm";
import { BOX_PATHS, type HomeLayout } from "../boxes/index.js";
import { schema, type Db } from "../store/index.js";
import { hostCertificate, newAuthority } from "./x509.js";

export interface AuthorityOptions {
  db: Db;
  /** The master key's seal (Secrets.sealer): the authorities' keys are sealed under it. */
  sealer: { seal(id: string, value: Buffer): string; open(id: string, sealed: string): Buffer };
  /** Where a machine's folder is on this host (its box sees it at /home). */
  homes: Pick<HomeLayout, "machineDir">;
}

type Pem = { cert: string; key: string };

/** The public authorities a box trusts besides its machine's: the host's bundle, else Node's. */
const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
/** Host certificates kept in memory (by machine and host). */
const MAX_CONTEXTS = 1000;

export class Authorities {
  readonly #o: AuthorityOptions;
  readonly #cas = new Map<string, Promise<Pem>>();
  readonly #contexts = new Map<string, Promise<tls.SecureContext>>();
  /** Machines whose folder holds the authority's files as written by this server. */
  readonly #written = new Set<string>();

  constructor(o: AuthorityOptions) {
    this.#o = o;
  }

  /** The machine's authority: read from the store, or made and stored the first time. */
  authority(machineId: string): Promise<Pem> {
    let p = this.#cas.get(machineId);
    if (!p) {
      p = this.#load(machineId);
      p.catch(() => this.#cas.delete(machineId));
      this.#cas.set(machineId, p);
    }
    return p;
  }

  async #load(machineId: string): Promise<Pem> {
    const t = schema.egressAuthorities;
    const read = async () => (await this.#o.db.select().from(t).where(eq(t.machineId, machineId)))[0];
    let row = await read();
    if (!row) {
      const made = newAuthority(`warren egress authority ${machineId}`);
      await this.#o.db
        .insert(t)
        .values({
          machineId,
          cert: made.cert,
          sealedKey: this.#o.sealer.seal(machineId, Buffer.from(made.key)),
        })
        .onConflictDoNothing();
      // another server may have made it first: the stored one wins
      row = await read();
      if (!row) throw new Error(`the machine ${machineId} is gone`);
    }
    return { cert: row.cert, key: this.#o.sealer.open(machineId, row.sealedKey).toString("utf8") };
  }

  /** The TLS context the proxy answers an intercepted connection to `host` with. */
  context(machineId: string, host: string, ip: number[] | null): Promise<tls.SecureContext> {
    const k = `${machineId}\n${host}`;
    let p = this.#contexts.get(k);
    if (!p) {
      if (this.#contexts.size >= MAX_CONTEXTS) this.#contexts.clear();
      p = this.authority(machineId).then((ca) => {
        const leaf = hostCertificate(ca, host, ip);
        return tls.createSecureContext({ cert: leaf.cert + ca.cert, key: leaf.key });
      });
      p.catch(() => this.#contexts.delete(k));
      this.#contexts.set(k, p);
    }
    return p;
  }

  /**
   * Writes the machine's authority into its folder (once per server, and again when it is
   * gone) and answers the variables that make a command's programs trust it.
   */
  async boxEnv(machineId: string): Promise<Record<string, string>> {
    const dir = path.join(this.#o.homes.machineDir(machineId), path.basename(BOX_PATHS.authority));
    const bundle = path.join(dir, "ca-bundle.pem");
    if (!this.#written.has(machineId) || !fs.existsSync(bundle)) {
      const ca = await this.authority(machineId);
      let system: string;
      try {
        system = await fs.promises.readFile(SYSTEM_BUNDLE, "utf8");
      } catch {
        system = tls.rootCertificates.join("\n");
      }
      await fs.promises.mkdir(dir, { recursive: true, mode: 0o755 });
      await fs.promises.chown(dir, 0, 0);
      await fs.promises.chmod(dir, 0o755);
      await writeWhole(path.join(dir, "authority.pem"), ca.cert);
      await writeWhole(bundle, `${system.trimEnd()}\n${ca.cert}`);
      this.#written.add(machineId);
    }
    const inBox = `${BOX_PATHS.authority}/ca-bundle.pem`;
    return {
      SSL_CERT_FILE: inBox,
      CURL_CA_BUNDLE: inBox,
      REQUESTS_CA_BUNDLE: inBox,
      GIT_SSL_CAINFO: inBox,
      NODE_EXTRA_CA_CERTS: `${BOX_PATHS.authority}/authority.pem`,
    };
  }
}

/** A root-owned file, 0644, replaced whole (a rename): no command ever reads half of it. */
async function writeWhole(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.promises.writeFile(tmp, text, { mode: 0o644 });
  await fs.promises.chown(tmp, 0, 0);
  await fs.promises.chmod(tmp, 0o644);
  await fs.promises.rename(tmp, file);
}
