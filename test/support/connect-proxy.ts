// An HTTP CONNECT proxy on loopback, as an operator's outbound proxy would be: it records each
// tunnel it is asked for (the authority and any Proxy-Authorization) and carries the bytes;
// any other request is 405.
import http from "node:http";
import net from "node:net";

export interface ConnectProxy {
  url: string;
  port: number;
  /** Every tunnel asked for, in order. */
  tunnels: { authority: string; auth: string | null }[];
  close(): Promise<void>;
}

export async function startConnectProxy(): Promise<ConnectProxy> {
  const tunnels: ConnectProxy["tunnels"] = [];
  const srv = http.createServer((_req, res) => res.writeHead(405).end());
  srv.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const authority = req.url ?? "";
    tunnels.push({ authority, auth: req.headers["proxy-authorization"] ?? null });
    const i = authority.lastIndexOf(":");
    const up = net.connect(Number(authority.slice(i + 1)), authority.slice(0, i).replace(/^\[|\]$/g, ""));
    up.once("connect", () => {
      client.write("HTTP/1.1 200 Connection established\r\n\r\n");
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    up.once("error", () => client.end("HTTP/1.1 502 Bad Gateway\r\n\r\n"));
    client.once("error", () => up.destroy());
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    tunnels,
    close: () => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))),
  };
}
