// A key and a self-signed certificate for a suite's loopback TLS server (EC P-256, by the
// host's openssl), written in a folder the suite owns.
import { execFileSync } from "node:child_process";
import path from "node:path";

/** Writes `key.pem` and `cert.pem` in `dir` for `cn`, valid for `san` (e.g. "IP:127.0.0.1"); answers their paths. */
export function selfSigned(
  dir: string,
  o: { cn: string; san: string; days: number },
): { key: string; cert: string } {
  const key = path.join(dir, "key.pem");
  const cert = path.join(dir, "cert.pem");
  const subject = ["-subj", `/CN=${o.cn}`, "-addext", `subjectAltName=${o.san}`];
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"].concat(
      ["-keyout", key, "-out", cert, "-days", String(o.days)],
      subject,
    ),
    { stdio: "ignore" },
  );
  return { key, cert };
}
