// The Settings tab: name, Max disk over the machine's reserved-disk bar (the agent's own saved
// cap left out of what the others reserve), and the sandbox policy.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { Agent, Usage } from "warren/sdk";
import { keys, warren, type Can } from "../api";
import { MaxDisk } from "../disk";
import { MoveAgent } from "./MoveAgent";
import { useSpecForm } from "./Spec";
import { Action, ErrorBox, Loading } from "../ui";

const lines = (s: string) =>
  s
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);

export function SettingsTab({ agent, usage, can }: { agent: Agent; usage: Usage | undefined; can: Can }) {
  const qc = useQueryClient();
  const [name, setName] = useState(agent.name);
  const [cap, setCap] = useState(agent.max_workspace_mib);
  const p = agent.sandbox_policy;
  const [read, setRead] = useState((p.files?.read ?? []).join("\n"));
  const [write, setWrite] = useState((p.files?.write ?? []).join("\n"));
  const [allow, setAllow] = useState((p.network?.allow ?? []).join("\n"));
  const [warnings, setWarnings] = useState<string[]>([]);
  const spec = useSpecForm(agent);
  const save = useMutation({
    mutationFn: () =>
      warren.agents.update(agent.id, {
        ...spec.patch(),
        name,
        max_workspace_mib: cap,
        sandbox_policy: {
          ...p,
          files: { read: lines(read), write: lines(write) },
          network: { ...p.network, allow: lines(allow) },
        },
      }),
    onSuccess: async (next) => {
      setWarnings(next.warnings ?? []);
      qc.setQueryData(keys.agent(agent.id), { ...next, warnings: undefined });
      await qc.invalidateQueries({ queryKey: keys.usage(agent.id) });
    },
  });
  const ro = !can.write;
  return (
    <form
      className="settings"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate();
      }}
    >
      {ro && (
        <p className="sub">Your role ({can.role}) reads these settings; an editor or admin changes them.</p>
      )}
      <label>
        Name
        <input
          name="agent_name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          disabled={ro}
          required
        />
      </label>
      <h2>Machine</h2>
      {usage ? (
        <MaxDisk
          figures={{
            machineMib: usage.machine.max_workspace_mib,
            othersMib: usage.machine.others_reserved_mib,
            freeMib: usage.machine.free_mib,
            machineName: usage.machine.name,
          }}
          value={cap}
          onChange={setCap}
          disabled={ro}
        />
      ) : (
        <Loading rows={2} />
      )}
      <MoveAgent agent={agent} can={can} />
      <h2>Sandbox policy</h2>
      <p className="sub">
        Beyond its home and /tmp, what the agent's commands may read and write, and which hosts they may
        reach. One entry a line; empty: nothing.
      </p>
      <div className="cols">
        <label>
          Read (folders)
          <textarea
            name="policy_read"
            rows={3}
            value={read}
            onChange={(e) => setRead(e.target.value)}
            disabled={ro}
          />
        </label>
        <label>
          Write (folders)
          <textarea
            name="policy_write"
            rows={3}
            value={write}
            onChange={(e) => setWrite(e.target.value)}
            disabled={ro}
          />
        </label>
        <label>
          Network allow (host, host:port, *.domain)
          <textarea
            name="policy_allow"
            rows={3}
            value={allow}
            onChange={(e) => setAllow(e.target.value)}
            disabled={ro}
          />
        </label>
      </div>
      {spec.fields(ro)}
      <ErrorBox error={save.error} />
      {warnings.map((w) => (
        <p key={w} className="warn" role="status">
          {w}
        </p>
      ))}
      {save.isSuccess && warnings.length === 0 && <p role="status">Saved.</p>}
      {can.write && (
        <Action type="submit" busy={save.isPending} busyLabel="Saving…" disabled={!Number.isFinite(cap)}>
          Save settings
        </Action>
      )}
    </form>
  );
}
