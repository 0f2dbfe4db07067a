// A site on loopback for the suites whose agents browse: one page, reached from a box as
// site.test (the egress proxy's hosts table), and a server whose bound admits its port.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startTestServer, type TestServer } from "./server.js";

export interface Site {
  port: number;
  close(this: void): void;
}

/** Serves `html` at every path on a free loopback port. */
export async function startSite(html: string): Promise<Site> {
  const server = http.createServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end(html),
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { port: (server.address() as AddressInfo).port, close: () => void server.close() };
}

/** A listening server (AUTH_MODE=trusted-header, boxes idle after 120 s) whose boxes reach `site` as site.test. */
export function startSiteServer(site: Site): Promise<TestServer> {
  return startTestServer({
    listen: true,
    env: {
      AUTH_MODE: "trusted-header",
      BOX_IDLE_S: "120",
      WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${site.port}`,
    },
    egressHosts: { "site.test": ["127.0.0.1"] },
  });
}
