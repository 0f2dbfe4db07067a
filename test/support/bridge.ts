// What the egress suites share: connections handed to the server's egress bridge as boxd hands
// one over from an agent's box, through a loopback listener whose accepted sockets stand for it.
import net, { type AddressInfo } from "node:net";
import type { TestServer } from "./server.js";

export interface BridgeFront {
  /**
   * A connection the server's bridges take as agent `uid`'s on the machine: sends `text` and
   * answers what came back until it closed (or until `done` says so, when the client ends it).
   */
  bridged(this: void, uid: number, text: string, done?: (got: string) => boolean): Promise<string>;
  /** Destroys every accepted socket and closes the listener. */
  close(this: void): Promise<void>;
}

export async function bridgeFront(t: TestServer, machineId: string): Promise<BridgeFront> {
  const accepted: net.Socket[] = [];
  const front = net.createServer({ allowHalfOpen: true }, (s) => accepted.push(s));
  await new Promise<void>((r) => front.listen(0, "127.0.0.1", r));
  return {
    bridged: async (uid, text, done) => {
      const client = net.connect((front.address() as AddressInfo).port, "127.0.0.1");
      await new Promise((r) => client.once("connect", r));
      while (accepted.length === 0 || accepted.at(-1)?.remotePort !== client.localPort)
        await new Promise((r) => setTimeout(r, 5));
      const server = accepted.at(-1) as net.Socket;
      t.server.bridges.accept(machineId, { id: 1, name: "egress", uid }, () => Promise.resolve(server));
      client.write(text);
      let got = "";
      client.on("data", (d: Buffer) => {
        got += d.toString();
        if (done?.(got)) client.end();
      });
      client.on("error", () => {}); // closed unanswered may be a reset: the answer is what came
      await new Promise((r) => client.once("close", r));
      return got;
    },
    close: async () => {
      for (const s of accepted) s.destroy();
      await new Promise((r) => front.close(r));
    },
  };
}
