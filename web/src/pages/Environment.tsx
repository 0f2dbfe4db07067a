// A machine's environment on its page: the packages of its last good revision, its builds,
// and the proposals its agents and members made; owners and admins approve or refuse them.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { warren } from "../api";
import { Action, Empty, ErrorBox, Loading, StatusBadge, when } from "../ui";

export function EnvironmentPanel({ machineId, manage }: { machineId: string; manage: boolean }) {
  const qc = useQueryClient();
  // read again every 2 s: a build going on ends on its own
  const env = useQuery({
    queryKey: ["machine-environment", machineId],
    queryFn: () => warren.machines.environment(machineId),
    refetchInterval: 2000,
  });
  const proposals = useQuery({
    queryKey: ["machine-proposals", machineId],
    queryFn: () => warren.machines.proposals(machineId).then((l) => l.items),
    refetchInterval: 2000,
  });
  const decide = useMutation({
    mutationFn: (d: { id: string; decision: "approve" | "refuse" }) =>
      warren.machines.decide(machineId, d.id, d.decision),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ["machine-proposals", machineId] });
      void qc.invalidateQueries({ queryKey: ["machine-environment", machineId] });
    },
  });
  const e = env.data;
  return (
    <div data-testid="environment">
      <h2>Environment</h2>
      <ErrorBox error={env.error} />
      {!e ? (
        <Loading rows={2} />
      ) : (
        <p className="sub" data-testid="environment-revision">
          Base: {e.base} · revision {e.revision}
          {e.box_revision !== null ? ` (the box runs revision ${e.box_revision})` : ""}
          {e.building !== null ? ` · building revision ${e.building}…` : ""}
          {e.packages.length > 0
            ? ` · ${e.packages.map((p) => `${p.name} ${p.version}`).join(", ")}`
            : " · no packages over the base"}
        </p>
      )}
      <h3>Proposals</h3>
      <ErrorBox error={proposals.error} />
      <ErrorBox error={decide.error} />
      {proposals.isPending ? (
        <Loading rows={2} />
      ) : proposals.data?.length ? (
        <ul>
          {proposals.data.map((p) => (
            <li key={p.id} data-testid={`proposal-${p.id}`}>
              <StatusBadge status={p.state} />{" "}
              <b>{p.packages.map((x) => `${x.name} ${x.version}`).join(", ")}</b> by {p.proposed_by} ·{" "}
              {when(p.created_at)} · “{p.why}”{p.revision !== null ? ` · revision ${p.revision}` : ""}
              {manage && p.state === "pending" && (
                <>
                  {" "}
                  <Action
                    type="button"
                    onClick={() => decide.mutate({ id: p.id, decision: "approve" })}
                    busy={decide.isPending}
                    busyLabel="Deciding…"
                  >
                    Approve
                  </Action>{" "}
                  <Action
                    type="button"
                    onClick={() => decide.mutate({ id: p.id, decision: "refuse" })}
                    busy={decide.isPending}
                    busyLabel="Deciding…"
                  >
                    Refuse
                  </Action>
                </>
              )}
            </li>
          ))}
        </ul>
      ) : (
        <Empty>
          No proposals: an agent asks for packages with env_propose, a member here or through the API.
        </Empty>
      )}
    </div>
  );
}
