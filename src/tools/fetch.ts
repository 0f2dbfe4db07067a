// web_fetch's one GET, made from the server: a host name may resolve only to public addresses
// (never loopback, private, link-local or the like: the server's own API and its neighbours
// are not a name's to reach), checked on the very address the connection uses, so a name that
// answers differently a moment later gains nothing. A private address is reached only when
// the allow-list names it as an IP address itself.
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";

const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  blocked.addSubnet(prefix, bits, "ipv4");
for (const [prefix, bits] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["64:ff9b::", 96],
  ["2001:db8::", 32],
] as const)
  blocked.addSubnet(prefix, bits, "ipv6");

/** Whether an address is one a host name may lead to: public unicast. */
export function isPublicAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return !blocked.check(mapped, "ipv4");
  if (net.isIPv4(address)) return !blocked.check(address, "ipv4");
  if (net.isIPv6(address)) return !blocked.check(address, "ipv6");
  return false;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

function publicLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { all: true, ...(options.family ? { family: options.family } : {}) }, (err, found) => {
    if (err) return callback(err, []);
    const ok = found.filter((a) => isPublicAddress(a.address));
    if (ok.length === 0) {
      const e: NodeJS.ErrnoException = new Error(
        `${hostname} resolves only to addresses that are not public (${found.map((a) => a.address).join(", ")}); to reach one, name the address itself in the network allow-list`,
      );
      e.code = "EADDRNOTPUBLIC";
      return callback(e, []);
    }
    if (options.all) return callback(null, ok);
    const first = ok[0]!;
    callback(null, first.address, first.family);
  });
}

export interface FetchAnswer {
  status: number;
  contentType: string;
  location: string | null;
  body: Buffer;
  truncated: boolean;
}

/** GETs the URL (no redirect followed), reading at most `maxBytes` of its body. */
export function getOnce(url: URL, maxBytes: number, signal: AbortSignal): Promise<FetchAnswer> {
  const lib = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(
      url,
      {
        method: "GET",
        lookup: publicLookup,
        signal,
        headers: { accept: "*/*", "user-agent": "warren-web-fetch" },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let length = 0;
        let truncated = false;
        const done = () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers["content-type"] ?? ""),
            location: typeof res.headers.location === "string" ? res.headers.location : null,
            body: Buffer.concat(chunks, length),
            truncated,
          });
        res.on("data", (c: Buffer) => {
          if (truncated) return;
          const room = maxBytes - length;
          if (c.length > room) {
            chunks.push(c.subarray(0, room));
            length = maxBytes;
            truncated = true;
            done();
            res.destroy();
            return;
          }
          chunks.push(c);
          length += c.length;
        });
        res.on("end", done);
        res.on("error", (err) => (truncated ? undefined : reject(err)));
      },
    );
    req.on("error", reject);
    req.end();
  });
}
