// A plain HTTP server of a test file on loopback: listening before the file's tests, closed
// (its open connections too) after them.
import type http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before } from "node:test";

/** Listens on a free loopback port for the file's tests; `url` is its base URL once they run. */
export function onLoopback(server: http.Server): { readonly url: string } {
  const at = { url: "" };
  before(async () => {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    at.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return at;
}
