// The kubernetes suites' set-up: the fake API server (test/support/fake-kube.ts), whose Pods are
// real local boxes, with the workspaces claim at the server's STATE_ROOT/workspaces (as the
// server's Pod mounts it) and a shared claim, and a warren server on WARREN_PROVIDER=kubernetes
// against it.
import path from "node:path";
import { BOX_ROOT_HOST_ID } from "../../src/boxes/kit/boxd.js";
import { testBoxdBinary } from "../box/fixture.js";
import { FakeKube } from "../support/fake-kube.js";
import { startTestServer, type TestServer } from "../support/server.js";

const NS = "warren-boxes";

/**
 * Starts the fake API server, hands it to `started` at once (so that the suite's `after` closes
 * it even when the server does not start), then the warren server against it.
 */
export async function serveOnFakeKube(
  o: { root: string; stateRoot: string; shared?: string | undefined; env?: Record<string, string> },
  started: (fake: FakeKube) => void,
): Promise<TestServer> {
  const fake = new FakeKube({
    root: path.join(o.root, "fake"),
    namespaces: [NS],
    storageClasses: ["standard"],
    claims: [
      // the server's Pod mounts this claim at STATE_ROOT/workspaces: here it is that folder
      {
        name: "warren-workspaces",
        accessModes: ["ReadWriteMany"],
        dir: path.join(o.stateRoot, "workspaces"),
      },
      { name: "warren-shared", accessModes: ["ReadWriteMany"], ...(o.shared ? { dir: o.shared } : {}) },
    ],
    token: "fake-token",
    boxdBinary: testBoxdBinary,
    bridgeBinary: path.join(path.dirname(testBoxdBinary), "box-bridge"),
  });
  started(fake);
  await fake.listen();
  return startTestServer({
    stateRoot: o.stateRoot,
    env: {
      WARREN_PROVIDER: "kubernetes",
      WARREN_K8S_KUBECONFIG: fake.kubeconfig(path.join(o.root, "kubeconfig")),
      WARREN_K8S_NAMESPACE: NS,
      // the fake's Pods are local boxes: box root is the local provider's host id there
      WARREN_K8S_BOX_ROOT_ID: String(BOX_ROOT_HOST_ID),
      ...o.env,
    },
  });
}
