// X.509 certificates made with node:crypto alone (DER written here, signed with ECDSA P-256
// and SHA-256): a machine's interception authority (a CA) and the certificates it signs for
// the hosts that secrets of use egress are bound to (src/egress/authority.ts).
import crypto, { type KeyObject } from "node:crypto";

const tlv = (tag: number, body: Buffer): Buffer => {
  const n = body.length;
  const len =
    n < 0x80
      ? Buffer.from([n])
      : n < 0x100
        ? Buffer.from([0x81, n])
        : n < 0x10000
          ? Buffer.from([0x82, n >> 8, n & 0xff])
          : Buffer.from([0x83, n >> 16, (n >> 8) & 0xff, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
};
const seq = (...parts: Buffer[]) => tlv(0x30, Buffer.concat(parts));
const set = (...parts: Buffer[]) => tlv(0x31, Buffer.concat(parts));
const ctx = (n: number, body: Buffer, constructed = true) => tlv((constructed ? 0xa0 : 0x80) | n, body);
const octets = (b: Buffer) => tlv(0x04, b);
const bits = (b: Buffer, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, "utf8"));

function integer(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  const v = b.subarray(i);
  return tlv(0x02, (v[0] as number) & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

function oid(text: string): Buffer {
  const [a = 0, b = 0, ...rest] = text.split(".").map(Number);
  const out = [a * 40 + b];
  for (const n of rest) {
    const enc = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) enc.unshift((v & 0x7f) | 0x80);
    out.push(...enc);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime before 2050, GeneralizedTime from then on (RFC 5280). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return d.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`))
    : tlv(0x18, Buffer.from(`${iso}Z`));
}

const name = (cn: string) => seq(set(seq(oid("2.5.4.3"), utf8(cn))));
const ext = (id: string, critical: boolean, value: Buffer) =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));
const ECDSA_SHA256 = seq(oid("1.2.840.10045.4.3.2"));

/** The key identifier of a public key: SHA-1 of its bits (RFC 5280 4.2.1.2, method 1). */
function keyId(pub: KeyObject): Buffer {
  const spki = pub.export({ type: "spki", format: "der" });
  // the last element of the SubjectPublicKeyInfo is the BIT STRING: for P-256 its 65 bytes end it
  return crypto
    .createHash("sha1")
    .update(spki.subarray(spki.length - 65))
    .digest();
}

/** A host's subjectAltName entry: a DNS name, or an IP address (4 or 16 bytes). */
function altName(host: string, ip: number[] | null): Buffer {
  return ip ? ctx(7, Buffer.from(ip), false) : ctx(2, Buffer.from(host, "ascii"), false);
}

interface Issue {
  subject: string;
  subjectKey: KeyObject;
  issuer: string;
  issuerKey: KeyObject;
  issuerPub: KeyObject;
  days: number;
  extensions: Buffer[];
}

function issue(o: Issue): string {
  const now = Date.now();
  const serial = crypto.randomBytes(16);
  serial[0] = (serial[0] as number) & 0x7f;
  const tbs = seq(
    ctx(0, integer(Buffer.from([2]))),
    integer(serial),
    ECDSA_SHA256,
    name(o.issuer),
    seq(time(new Date(now - 3600_000)), time(new Date(now + o.days * 86_400_000))),
    name(o.subject),
    o.subjectKey.export({ type: "spki", format: "der" }),
    ctx(3, seq(...o.extensions, ext("2.5.29.35", false, seq(ctx(0, keyId(o.issuerPub), false))))),
  );
  const sig = crypto.sign("sha256", tbs, { key: o.issuerKey, dsaEncoding: "der" });
  const der = seq(tbs, ECDSA_SHA256, bits(sig));
  return `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{1,64}/g, "$&\n")}-----END CERTIFICATE-----\n`;
}

const newKey = () => crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" });

/** A new certificate authority (ten years): its certificate and its key, both PEM. */
export function newAuthority(cn: string): { cert: string; key: string } {
  const { publicKey, privateKey } = newKey();
  const cert = issue({
    subject: cn,
    subjectKey: publicKey,
    issuer: cn,
    issuerKey: privateKey,
    issuerPub: publicKey,
    days: 3650,
    extensions: [
      ext("2.5.29.19", true, seq(bool(true), integer(Buffer.from([0])))),
      // keyCertSign and cRLSign
      ext("2.5.29.15", true, bits(Buffer.from([0x06]), 1)),
      ext("2.5.29.14", false, octets(keyId(publicKey))),
    ],
  });
  return { cert, key: privateKey.export({ type: "pkcs8", format: "pem" }) as string };
}

/** The key every host certificate of this process carries (only the server holds it). */
let leafKey: { publicKey: KeyObject; privateKey: KeyObject } | undefined;

/** A host's certificate (thirty days), signed by the authority; with the key it carries. */
export function hostCertificate(
  ca: { cert: string; key: string },
  host: string,
  ip: number[] | null,
): { cert: string; key: string } {
  leafKey ??= newKey();
  const caCert = new crypto.X509Certificate(ca.cert);
  const cert = issue({
    subject: host,
    subjectKey: leafKey.publicKey,
    issuer: caCert.subject.replace(/^CN=/, ""),
    issuerKey: crypto.createPrivateKey(ca.key),
    issuerPub: caCert.publicKey,
    days: 30,
    extensions: [
      ext("2.5.29.19", true, seq()),
      // digitalSignature
      ext("2.5.29.15", true, bits(Buffer.from([0x80]), 7)),
      ext("2.5.29.37", false, seq(oid("1.3.6.1.5.5.7.3.1"))),
      ext("2.5.29.17", false, seq(altName(host, ip))),
      ext("2.5.29.14", false, octets(keyId(leafKey.publicKey))),
    ],
  });
  return { cert, key: leafKey.privateKey.export({ type: "pkcs8", format: "pem" }) as string };
}
