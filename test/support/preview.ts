// A request to a server's previews' listener at a preview address (its Host header names the
// agent and the port), over a plain loopback connection: what a browser sends, without one.
import http from "node:http";

export interface PreviewAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export function previewGet(
  listenPort: number,
  url: URL,
  headers: Record<string, string> = {},
  method = "GET",
): Promise<PreviewAnswer> {
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: "127.0.0.1",
        port: listenPort,
        method,
        path: `${url.pathname}${url.search}`,
        headers: { host: url.host, ...headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    r.on("error", reject);
    r.end();
  });
}
