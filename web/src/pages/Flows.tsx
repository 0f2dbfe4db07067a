// The Flows page of an organisation (its flows, each with its instances, and a new instance),
// and an instance's page: its runs (links to each), its agents, its workspace and End.
import { useMutation, useQueries, useQuery, useQueryClient } from "@tanstack/react-query";
import type { Flow } from "warren/sdk";
import { keys, useCan, warren } from "../api";
import { Link, navigate, useTitle } from "../router";
import { OrgCrumb } from "../crumbs";
import { Action, Empty, ErrorBox, Loading, StatusBadge, mib, when } from "../ui";

function FlowInstances({ flow, canWrite }: { flow: Flow; canWrite: boolean }) {
  const qc = useQueryClient();
  const instances = useQuery({
    queryKey: keys.instances(flow.id),
    queryFn: () => warren.flows.instances(flow.id).then((l) => l.items),
  });
  const start = useMutation({
    mutationFn: () => warren.flows.start(flow.id, {}),
    onSuccess: async (i) => {
      await qc.invalidateQueries({ queryKey: keys.instances(flow.id) });
      navigate(`/flow-instances/${i.id}`);
    },
  });
  return (
    <div data-testid="flow">
      <h2>{flow.name}</h2>
      <p className="sub">
        Agents:{" "}
        {flow.agent_ids.map((a, n) => (
          <span key={a}>
            {n > 0 && ", "}
            <Link href={`/agents/${a}`}>{a}</Link>
          </span>
        ))}
      </p>
      <ErrorBox error={instances.error ?? start.error} />
      {instances.isPending ? (
        <Loading rows={2} />
      ) : instances.data?.length === 0 ? (
        <Empty>No instance of this flow yet.</Empty>
      ) : (
        <table data-testid="instances">
          <thead>
            <tr>
              <th>Instance</th>
              <th>Status</th>
              <th>Runs</th>
              <th>Started</th>
            </tr>
          </thead>
          <tbody>
            {instances.data?.map((i) => (
              <tr key={i.id}>
                <td>
                  <Link href={`/flow-instances/${i.id}`}>{i.name ?? i.id}</Link>
                </td>
                <td>
                  <StatusBadge status={i.status} />
                </td>
                <td>{i.run_ids.length}</td>
                <td>{when(i.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {canWrite && (
        <Action type="button" busy={start.isPending} busyLabel="Starting…" onClick={() => start.mutate()}>
          Start an instance
        </Action>
      )}
    </div>
  );
}

export function FlowsPage({ orgId }: { orgId: string }) {
  useTitle("Flows");
  const can = useCan(orgId);
  const flows = useQuery({
    queryKey: keys.flows(orgId),
    queryFn: () => warren.flows.list(orgId).then((l) => l.items),
  });
  return (
    <section>
      <p className="crumbs">
        <Link href="/">Organisations</Link> / <OrgCrumb orgId={orgId} /> /
      </p>
      <h1>Flows</h1>
      <p className="sub">
        Named sets of the organisation&apos;s agents; each instance of a flow has a /workspace its agents
        share, kept when it ends.
      </p>
      <ErrorBox error={flows.error} />
      {flows.isPending ? (
        <Loading rows={3} />
      ) : flows.data?.length === 0 ? (
        <Empty>This organisation has no flow yet.</Empty>
      ) : (
        flows.data?.map((f) => <FlowInstances key={f.id} flow={f} canWrite={can.write} />)
      )}
    </section>
  );
}

export function InstancePage({ id }: { id: string }) {
  const qc = useQueryClient();
  const inst = useQuery({ queryKey: keys.instance(id), queryFn: () => warren.flows.instance(id) });
  useTitle(inst.data?.name ?? "Flow instance");
  const can = useCan(inst.data?.org_id);
  const runs = useQueries({
    queries: (inst.data?.run_ids ?? []).map((r) => ({
      queryKey: keys.run(r),
      queryFn: () => warren.runs.get(r),
    })),
  });
  const end = useMutation({
    mutationFn: () => warren.flows.end(id),
    onSuccess: async (i) => {
      qc.setQueryData(keys.instance(id), i);
      await qc.invalidateQueries({ queryKey: keys.instances(i.flow_id) });
    },
  });
  const i = inst.data;
  return (
    <section>
      <p className="crumbs">
        <Link href="/">Organisations</Link> /{" "}
        {i && (
          <>
            <OrgCrumb orgId={i.org_id} /> / <Link href={`/orgs/${i.org_id}/flows`}>flows</Link> /
          </>
        )}
      </p>
      <ErrorBox error={inst.error ?? end.error} />
      {!i ? (
        <Loading rows={4} />
      ) : (
        <>
          <h1>
            {i.name ?? i.id} <StatusBadge status={i.status} />
          </h1>
          <dl className="spec" data-testid="instance">
            <dt>Workspace</dt>
            <dd>
              <code data-testid="workspace">{i.workspace.host_path}</code> (its agents&apos;{" "}
              <code>{i.workspace.path}</code>, {mib(i.workspace.mib)})
            </dd>
            <dt>Agents</dt>
            <dd>
              {i.agent_ids.map((a, n) => (
                <span key={a}>
                  {n > 0 && ", "}
                  <Link href={`/agents/${a}`}>{a}</Link>
                </span>
              ))}
            </dd>
            <dt>Started</dt>
            <dd>{when(i.created_at)}</dd>
            {i.ended_at && (
              <>
                <dt>Ended</dt>
                <dd>{when(i.ended_at)} (its workspace is kept)</dd>
              </>
            )}
          </dl>
          {can.write && i.status === "running" && (
            <Action type="button" busy={end.isPending} busyLabel="Ending…" onClick={() => end.mutate()}>
              End
            </Action>
          )}
          <h2>Runs</h2>
          {i.run_ids.length === 0 ? (
            <Empty>No run in this instance yet.</Empty>
          ) : (
            <table data-testid="instance-runs">
              <thead>
                <tr>
                  <th>Run</th>
                  <th>Agent</th>
                  <th>Status</th>
                  <th>Started</th>
                </tr>
              </thead>
              <tbody>
                {runs.map((r, n) =>
                  r.data ? (
                    <tr key={r.data.id}>
                      <td>
                        <Link href={`/agents/${r.data.agent_id}/runs/${r.data.id}`}>{r.data.id}</Link>
                      </td>
                      <td>
                        <Link href={`/agents/${r.data.agent_id}`}>{r.data.agent_id}</Link>
                      </td>
                      <td>
                        <StatusBadge status={r.data.status} />
                      </td>
                      <td>{when(r.data.started_at)}</td>
                    </tr>
                  ) : (
                    <tr key={i.run_ids[n]}>
                      <td colSpan={4}>
                        <ErrorBox error={r.error} />
                      </td>
                    </tr>
                  ),
                )}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
