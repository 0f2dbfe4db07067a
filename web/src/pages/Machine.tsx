// `/machines/:id`: state, limits, the box's live usage and events, its agents, pause and stop.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { keys, useCan, useOrgs, warren } from "../api";
import { Link, useTitle } from "../router";
import { EnvironmentPanel } from "./Environment";
import { Action, bytes, Empty, ErrorBox, Loading, mib, StatusBadge, UseBar, when } from "../ui";

export function MachinePage({ id }: { id: string }) {
  const qc = useQueryClient();
  // The box's state and usage, live: read again every 2 s while the page is open.
  const machine = useQuery({
    queryKey: keys.machine(id),
    queryFn: () => warren.machines.get(id),
    refetchInterval: 2000,
  });
  const m = machine.data;
  useTitle(m?.name ?? "Machine");
  const can = useCan(m?.org_id);
  const orgName = useOrgs().data?.find((o) => o.id === m?.org_id)?.name ?? "organisation";
  const agents = useQuery({
    queryKey: ["machine-agents", id],
    queryFn: () => warren.agents.list({ machine_id: id }).then((l) => l.items),
  });
  const stop = useMutation({
    mutationFn: () => warren.machines.stop(id),
    onSuccess: (next) => qc.setQueryData(keys.machine(id), next),
  });
  // frozen in memory; the next command, run or terminal of one of its agents resumes it
  const pause = useMutation({
    mutationFn: () => warren.machines.pause(id),
    onSuccess: (next) => qc.setQueryData(keys.machine(id), next),
  });
  if (machine.error && !m)
    return (
      <section>
        <h1>Machine</h1>
        <ErrorBox error={machine.error} />
        <Empty>
          Go back to your <Link href="/">organisations</Link>.
        </Empty>
      </section>
    );
  const usage = m?.box?.usage;
  return (
    <section>
      <p className="crumbs">
        <Link href="/">Organisations</Link> / {m ? <Link href={`/orgs/${m.org_id}`}>{orgName}</Link> : "…"} /
      </p>
      <h1>
        {m?.name ?? "…"} {m && <StatusBadge status={m.box?.state ?? m.state} />}
      </h1>
      {!m ? (
        <Loading rows={6} />
      ) : (
        <>
          <p className="sub" data-testid="machine-state">
            <b>{m.state}</b>: {m.state_reason} · since {when(m.state_changed_at)}
          </p>
          {can.write && (
            <p>
              <Action
                type="button"
                onClick={() => pause.mutate()}
                busy={pause.isPending}
                busyLabel="Pausing…"
                disabled={m.state !== "running"}
              >
                Pause the box
              </Action>{" "}
              <Action
                type="button"
                onClick={() => stop.mutate()}
                busy={stop.isPending}
                busyLabel="Stopping…"
                disabled={m.state === "stopped"}
              >
                Stop the box
              </Action>
            </p>
          )}
          <ErrorBox error={pause.error} />
          <ErrorBox error={stop.error} />
          <div className="cards">
            <div className="card">
              <h2>Limits</h2>
              <dl>
                <dt>Memory</dt>
                <dd>{m.memory_mib} MiB</dd>
                <dt>CPUs</dt>
                <dd>{m.cpus}</dd>
                <dt>Agents</dt>
                <dd>{m.agents}</dd>
                <dt>Trust</dt>
                <dd>{m.trust}</dd>
                <dt>Runaway after</dt>
                <dd>{m.runaway_after_s} s</dd>
              </dl>
            </div>
            <div className="card" data-testid="box-usage">
              <h2>Box now</h2>
              {m.state === "paused" ? (
                <Empty>
                  The box is paused: its processes and files wait in memory. The next command, run or terminal
                  of one of its agents resumes it.
                </Empty>
              ) : usage ? (
                <dl>
                  <dt>CPU used</dt>
                  <dd>{usage.cpu_s.toFixed(1)} s</dd>
                  <dt>Memory</dt>
                  <dd>
                    {bytes(usage.memory_bytes)} (peak {bytes(usage.memory_peak_bytes)})
                  </dd>
                  <dt>Processes</dt>
                  <dd>{usage.pids}</dd>
                  <dt>At a limit</dt>
                  <dd>
                    {m.box?.at_limit ? `${m.box.at_limit.limit} since ${when(m.box.at_limit.since)}` : "no"}
                  </dd>
                </dl>
              ) : (
                <Empty>
                  The box is not running. It starts with the next command, run or terminal of one of its
                  agents.
                </Empty>
              )}
            </div>
            <div className="card">
              <h2>Disk</h2>
              <UseBar label="Machine folder" used={m.workspace_mib} cap={m.max_workspace_mib} />
              <p>
                Agents' caps reserve {mib(m.reserved_mib)} of {mib(m.max_workspace_mib)};{" "}
                {mib(m.unreserved_mib)} unreserved.
                {m.free_mib === null
                  ? " Disk is measured after a generation."
                  : ` ${mib(m.free_mib)} free as last measured.`}
              </p>
            </div>
          </div>
          <h2>Box events</h2>
          {m.box?.events.length ? (
            <ol className="timeline">
              {m.box.events.map((e, i) => (
                <li key={`${e.at}-${i}`}>
                  <time>{when(e.at)}</time> <b>{e.type}</b> {e.detail}
                </li>
              ))}
            </ol>
          ) : (
            <Empty>No events: the server records here a command tree it had to stop.</Empty>
          )}
          <EnvironmentPanel machineId={id} manage={can.manage} />
        </>
      )}
      <h2>Agents on this machine</h2>
      <ErrorBox error={agents.error} />
      {agents.isPending ? (
        <Loading rows={2} />
      ) : agents.data?.length ? (
        <ul>
          {agents.data.map((a) => (
            <li key={a.id}>
              <Link href={`/agents/${a.id}`}>{a.name}</Link> · Max disk {mib(a.max_workspace_mib)}
            </li>
          ))}
        </ul>
      ) : (
        <Empty>No agents live here yet; create one from the organisation's page.</Empty>
      )}
    </section>
  );
}
