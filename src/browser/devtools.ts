// The browser's DevTools HTTP face, asked over boxd's forward: where its WebSocket is.
import http from "node:http";
import type { Duplex } from "node:stream";

/** GET /json/version on the box's port: the browser's WebSocket URL, for 127.0.0.1:<port>. */
export function devtoolsUrl(open: () => Promise<Duplex>, port: number, timeoutMs = 5000): Promise<string> {
  return open().then(
    (conn) =>
      new Promise<string>((resolve, reject) => {
        const req = http.request({
          method: "GET",
          path: "/json/version",
          // the DevTools face answers only a Host that is an address or localhost
          headers: { host: `127.0.0.1:${port}` },
          createConnection: () => conn.resume(),
          timeout: timeoutMs,
        });
        req.on("timeout", () => req.destroy(new Error("no answer")));
        req.on("error", reject);
        req.on("response", (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => {
            body += c;
            if (body.length > 64 * 1024) req.destroy(new Error("answer too long"));
          });
          res.on("end", () => {
            try {
              const url = (JSON.parse(body) as { webSocketDebuggerUrl?: unknown }).webSocketDebuggerUrl;
              if (typeof url !== "string") throw new Error("no webSocketDebuggerUrl");
              const u = new URL(url);
              resolve(`ws://127.0.0.1:${port}${u.pathname}`);
            } catch (err) {
              reject(err instanceof Error ? err : new Error(String(err)));
            }
          });
        });
        req.end();
      }),
  );
}
