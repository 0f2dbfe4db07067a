// What the workspaces' tests share: a policy file with one class of each scope, and a
// STATE_ROOT that holds it.
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

export const POLICY = `workspace_classes:
  private_scratch:
    description: Each agent gets its own working directory.
    workspace_scope: per-agent
  shared_instance:
    description: Agents on one flow instance share a directory.
    workspace_scope: per-flow-instance
`;

export async function stateWithPolicy(policy = POLICY): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), "warren-ws-"));
  await writeFile(path.join(root, "policy.yaml"), policy);
  return root;
}
