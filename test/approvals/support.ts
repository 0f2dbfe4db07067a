// What the approvals suites share: a tool policy that lets an agent read files freely and
// write them only once a person allows, and the body of an assistant agent under it whose
// model is scripted (its home's turns.json).

export const APPROVAL_POLICY = [
  `@id("reads") permit(principal, action, resource == Tool::"read_file");`,
  `@id("writes") @approval("required") permit(principal, action, resource == Tool::"write_file");`,
].join("\n");

/** `POST /api/agents`'s body for such an agent. */
export const approvalAgent = (orgId: string, machineId: string, name: string) => ({
  org_id: orgId,
  machine_id: machineId,
  name,
  kind: "assistant",
  model: { provider: "script", name: "turns.json" },
  tools: [
    { type: "builtin", name: "read_file" },
    { type: "builtin", name: "write_file" },
  ],
  tool_policy: APPROVAL_POLICY,
});
