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

/**
 * A box's server for preview suites (python3, argv[1] the port): "hello" on GET, /quit stops
 * it, and a WebSocket that says "open" and then holds, sending nothing, until either side
 * closes it.
 */
export const HOLDING_BOX_SERVER = String.raw`
import base64, hashlib, http.server, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.headers.get("upgrade", "").lower() == "websocket":
            key = self.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
            self.send_response(101)
            self.send_header("upgrade", "websocket")
            self.send_header("connection", "Upgrade")
            self.send_header("sec-websocket-accept", base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
            self.end_headers()
            self.wfile.write(bytes([0x81, 4]) + b"open")
            self.wfile.flush()
            while self.rfile.read(1):
                pass
            self.close_connection = True
            return
        if self.path == "/quit":
            threading.Thread(target=srv.shutdown).start()
        data = b"hello"
        self.send_response(200)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
srv.serve_forever()
`;
