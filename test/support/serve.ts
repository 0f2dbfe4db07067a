// What tests that start a real `warren serve` share: the built CLI and a free loopback port.
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const builtCli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist/cli/main.js");

/** A loopback port nothing listens on right now. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
