// Upstream servers for egress tests, on this host's loopback (the only network here): plain
// HTTP and HTTPS (a self-signed certificate for the test names, made with openssl), each
// serving a small package index, a git repository (dumb HTTP) and a registry document.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { selfSigned } from "../support/tls.js";

export interface Upstreams {
  httpPort: number;
  httpsPort: number;
  /** The certificate's PEM (also its own CA). */
  ca: string;
  /** Requests seen: method, host header, url (and the Authorization header, when one came). */
  seen: { method: string; host: string; url: string; authorization?: string }[];
  close(): Promise<void>;
}

/** Names the certificate covers (each resolves to 127.0.0.1 in the tests' hosts table). */
export const TEST_NAMES = ["pkg.test", "git.test", "api.example.com", "example.com", "evilexample.com"];

function wheel(dir: string): { file: string; sha256: string } {
  // a minimal pure-Python wheel: enough for `pip download --no-deps`
  const script = `
import zipfile, sys, hashlib, base64
out = sys.argv[1]
files = {
  "demo/__init__.py": b"VALUE = 1\\n",
  "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\\nName: demo\\nVersion: 1.0\\n",
  "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = ""
for name, data in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += f"{name},sha256={h},{len(data)}\\n"
record += "demo-1.0.dist-info/RECORD,,\\n"
with zipfile.ZipFile(out, "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
    z.writestr("demo-1.0.dist-info/RECORD", record)
`;
  const file = path.join(dir, "demo-1.0-py3-none-any.whl");
  execFileSync("python3", ["-c", script, file]);
  return { file, sha256: crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex") };
}

function gitRepo(dir: string): string {
  const work = path.join(dir, "work");
  const bare = path.join(dir, "repo.git");
  const git = (cwd: string, ...args: string[]) =>
    execFileSync("git", args, {
      cwd,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "t",
        GIT_AUTHOR_EMAIL: "t@t",
        GIT_COMMITTER_NAME: "t",
        GIT_COMMITTER_EMAIL: "t@t",
      },
    });
  fs.mkdirSync(work);
  git(work, "init", "-q", "-b", "main");
  fs.writeFileSync(path.join(work, "README"), "cloned through the egress proxy\n");
  git(work, "add", "README");
  git(work, "commit", "-q", "-m", "first");
  git(dir, "clone", "-q", "--bare", work, bare);
  git(bare, "update-server-info");
  return bare;
}

export async function startUpstreams(): Promise<Upstreams> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "egress-up-"));
  const { key, cert } = selfSigned(dir, {
    cn: "pkg.test",
    san: TEST_NAMES.map((n) => `DNS:${n}`).join(","),
    days: 2,
  });
  const whl = wheel(dir);
  const bare = gitRepo(dir);
  const seen: Upstreams["seen"] = [];
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = req.url ?? "/";
    const authorization = req.headers.authorization;
    seen.push({
      method: req.method ?? "",
      host: req.headers.host ?? "",
      url,
      ...(authorization ? { authorization } : {}),
    });
    const body: Buffer[] = [];
    req.on("data", (b: Buffer) => body.push(b));
    req.on("end", () => {
      if (url === "/hello") return void res.end(`hello from ${req.headers.host}\n`);
      if (url.startsWith("/echo")) return void res.end(Buffer.concat(body));
      // a host that reflects the request's credentials (what a secret held by the proxy cannot protect)
      if (url === "/reflect") return void res.end(`authorization: ${authorization ?? ""}\n`);
      if (url === "/simple/demo/")
        return void res
          .writeHead(200, { "content-type": "text/html" })
          .end(
            `<html><body><a href="/files/demo-1.0-py3-none-any.whl#sha256=${whl.sha256}">demo-1.0-py3-none-any.whl</a></body></html>`,
          );
      if (url === "/files/demo-1.0-py3-none-any.whl") return void res.end(fs.readFileSync(whl.file));
      if (url === "/npm/demo") {
        res.setHeader("content-type", "application/json");
        return void res.end(
          JSON.stringify({
            name: "demo",
            "dist-tags": { latest: "1.0.0" },
            versions: {
              "1.0.0": {
                name: "demo",
                version: "1.0.0",
                description: "served on loopback",
                dist: { tarball: "https://pkg.test/npm/demo/-/demo-1.0.0.tgz", shasum: "0" },
              },
            },
            time: { "1.0.0": "2026-01-01T00:00:00.000Z" },
          }),
        );
      }
      if (url.startsWith("/repo.git/")) {
        const rel = path.normalize(decodeURIComponent(url.slice("/repo.git/".length).split("?")[0] ?? ""));
        const file = path.join(bare, rel);
        if (!rel.startsWith("..") && fs.existsSync(file) && fs.statSync(file).isFile())
          return void res.end(fs.readFileSync(file));
      }
      res.writeHead(404).end("not found\n");
    });
  };
  const plain = http.createServer(handler);
  const tls = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, handler);
  await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
  await new Promise<void>((r) => tls.listen(0, "127.0.0.1", r));
  return {
    httpPort: (plain.address() as AddressInfo).port,
    httpsPort: (tls.address() as AddressInfo).port,
    ca: fs.readFileSync(cert, "utf8"),
    seen,
    async close() {
      plain.closeAllConnections();
      tls.closeAllConnections();
      await new Promise((r) => plain.close(r));
      await new Promise((r) => tls.close(r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
