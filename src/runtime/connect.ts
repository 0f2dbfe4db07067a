// The one place the server opens boxd on a running box, whatever its provider.
import { BoxdClient } from "../boxd/index.js";
import type { BoxHandle } from "../boxes/index.js";
import type { BoxExec } from "./exec-port.js";

export function connectBoxd(box: BoxHandle): BoxExec {
  const client = new BoxdClient(box.endpoint);
  return {
    ping: () => client.ping(),
    exec: (req, io) => client.exec(req, io),
    forward: (port) => client.forward(port),
    pty: (req, opts) => client.pty(req, opts),
    calls: (onCall) => client.calls(onCall),
    bridges: (onBridge) => client.bridges(onBridge),
    bridge: (id) => client.bridge(id),
    close: () => {},
  };
}
