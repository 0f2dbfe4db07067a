// Settings' machine picker: the other machines of the agent's organisation, each with its
// unreserved disk, the chosen one's reserved-disk bar with this agent's cap on it (as the
// create dialog shows), and Move, which carries the agent's home, slot and ports there.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { Agent } from "warren/sdk";
import { keys, warren, type Can } from "../api";
import { MaxDisk } from "../disk";
import { Action, ErrorBox, mib } from "../ui";

export function MoveAgent({ agent, can }: { agent: Agent; can: Can }) {
  const qc = useQueryClient();
  const machines = useQuery({
    queryKey: keys.machines(agent.org_id),
    queryFn: async () => (await warren.machines.list({ org_id: agent.org_id })).items,
  });
  const others = (machines.data ?? []).filter((m) => m.id !== agent.machine_id);
  const [picked, setPicked] = useState("");
  const target = others.find((m) => m.id === picked) ?? others[0];
  const move = useMutation({
    mutationFn: () => warren.agents.move(agent.id, target!.id),
    onSuccess: async (next) => {
      qc.setQueryData(keys.agent(agent.id), next);
      await qc.invalidateQueries({ queryKey: keys.machines(agent.org_id) });
      await qc.invalidateQueries({ queryKey: keys.usage(agent.id) });
    },
  });
  if (!can.write || others.length === 0 || !target) return null;
  return (
    <div className="move" data-testid="move-agent">
      <label>
        Move to machine
        <select name="move_machine" value={target.id} onChange={(e) => setPicked(e.target.value)}>
          {others.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name} ({mib(m.unreserved_mib)} unreserved)
            </option>
          ))}
        </select>
      </label>
      <MaxDisk
        figures={{
          machineMib: target.max_workspace_mib,
          othersMib: target.reserved_mib,
          freeMib: target.free_mib,
          machineName: target.name,
        }}
        value={agent.max_workspace_mib}
        disabled
        prefix="move-"
      />
      <ErrorBox error={move.error} />
      <Action type="button" onClick={() => move.mutate()} busy={move.isPending} busyLabel="Moving…">
        Move agent
      </Action>
    </div>
  );
}
