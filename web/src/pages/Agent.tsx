// `/agents/:id[/:tab]`: the agent, with its tabs. The agent, its usage, its runs and the
// caller's organisations are asked for together, from the id in the address: no waterfall.
import { useQuery } from "@tanstack/react-query";
import { lazy, Suspense } from "react";
import { isTerminalRunStatus } from "warren/sdk";
import { keys, useCan, useOrgs, warren } from "../api";
import { Link, useTitle } from "../router";
import { Empty, ErrorBox, Loading, mib, UseBar } from "../ui";
import { RunsTab } from "./Runs";
import { SettingsTab } from "./Settings";
import { FilesTab } from "./Files";
import { SpecView } from "./Spec";
import { EgressTab } from "./Egress";
import { ConversationsTab } from "./Conversations";
import { SchedulesTab } from "./Schedules";
import { VersionsTab } from "./Versions";
import { UsageCharts } from "./Usage";

const TerminalTab = lazy(() => import("../terminal/TerminalTab").then((m) => ({ default: m.TerminalTab })));
const BrowserTab = lazy(() => import("../browser/BrowserTab").then((m) => ({ default: m.BrowserTab })));

const TABS = [
  { id: "overview", label: "Overview", needs: "read" },
  { id: "runs", label: "Runs", needs: "read" },
  { id: "conversations", label: "Conversations", needs: "inspect" },
  { id: "schedules", label: "Schedules", needs: "read" },
  { id: "versions", label: "Versions", needs: "read" },
  { id: "files", label: "Files", needs: "inspect" },
  { id: "terminal", label: "Terminal", needs: "inspect" },
  { id: "browser", label: "Browser", needs: "inspect" },
  { id: "usage", label: "Usage", needs: "read" },
  { id: "egress", label: "Egress", needs: "inspect" },
  { id: "settings", label: "Settings", needs: "read" },
] as const;

export function AgentPage({ id, tab }: { id: string; tab: string }) {
  const agent = useQuery({ queryKey: keys.agent(id), queryFn: () => warren.agents.get(id) });
  const usage = useQuery({ queryKey: keys.usage(id), queryFn: () => warren.agent(id).usage() });
  const runs = useQuery({
    queryKey: keys.runs(id),
    queryFn: () => warren.runs.list(id, { limit: 50 }).then((l) => l.items),
    // live while a run is going on
    refetchInterval: (q) => (q.state.data?.some((r) => !isTerminalRunStatus(r.status)) ? 1000 : false),
  });
  const a = agent.data;
  const can = useCan(a?.org_id);
  const orgName = useOrgs().data?.find((o) => o.id === a?.org_id)?.name ?? "organisation";
  useTitle(a?.name ?? "Agent");
  const allowed = (needs: (typeof TABS)[number]["needs"]) => needs === "read" || can.inspect;
  const tabs = TABS.filter((t) => a === undefined || allowed(t.needs));
  const current = TABS.find((t) => t.id === tab);

  if (agent.error && !a)
    return (
      <section>
        <h1>Agent</h1>
        <ErrorBox error={agent.error} />
        <Empty>
          Go back to your <Link href="/">organisations</Link>.
        </Empty>
      </section>
    );
  return (
    <section>
      <p className="crumbs">
        <Link href="/">Organisations</Link> / {a ? <Link href={`/orgs/${a.org_id}`}>{orgName}</Link> : "…"} /{" "}
        {a ? <Link href={`/machines/${a.machine_id}`}>{usage.data?.machine.name ?? "machine"}</Link> : "…"} /
      </p>
      <h1>{a?.name ?? "…"}</h1>
      <nav className="tabs" aria-label="agent">
        {tabs.map((t) => (
          <Link
            key={t.id}
            href={t.id === "overview" ? `/agents/${id}` : `/agents/${id}/${t.id}`}
            aria-current={t.id === tab ? "page" : undefined}
          >
            {t.label}
          </Link>
        ))}
      </nav>
      <div className="tabpanel">
        {!a ? (
          <Loading rows={5} />
        ) : !current ? (
          <Empty>No such tab. Pick one above.</Empty>
        ) : !allowed(current.needs) ? (
          <Empty>
            Your role ({can.role}) does not show this agent's {current.label.toLowerCase()}: ask an owner or
            admin.
          </Empty>
        ) : current.id === "overview" ? (
          <section>
            <dl className="spec">
              <dt>Id</dt>
              <dd>
                <code>{a.id}</code>
              </dd>
              <dt>Home</dt>
              <dd>
                <code>{a.home}</code>
              </dd>
              <dt>Slot, uid</dt>
              <dd>
                {a.slot}, {a.uid}
              </dd>
              <dt>Port block</dt>
              <dd data-testid="ports">
                {a.ports.first}–{a.ports.last} (<code>PORT={a.ports.first}</code>)
              </dd>
              <dt>Preview</dt>
              <dd>
                {/* the API sends the browser on to the port's own origin with a one-time token
                    (a role that may not see workloads is refused there) */}
                <a
                  data-testid="preview"
                  href={`/api/agents/${a.id}/ports/${a.ports.first}/`}
                  target="_blank"
                  rel="noopener noreferrer"
                >
                  port {a.ports.first}
                </a>{" "}
                (on an address of its own; port P of the block: <code>/api/agents/{a.id}/ports/P/</code>)
              </dd>
              <dt>Max disk</dt>
              <dd>{mib(a.max_workspace_mib)}</dd>
              <dt>Created</dt>
              <dd>{new Date(a.created_at).toLocaleString()}</dd>
            </dl>
            <SpecView agent={a} />
            <h2>Environment of every command</h2>
            <pre className="env">
              {[
                `HOME=${a.home}`,
                `WARREN_AGENT_HOME=${a.home}`,
                `WARREN_AGENT_ID=${a.id}`,
                `PORT=${a.ports.first}`,
                `WARREN_PORTS=${a.ports.first}-${a.ports.last}`,
                "…and the secrets granted to it (values never shown)",
              ].join("\n")}
            </pre>
            <h2>Sandbox policy</h2>
            <pre className="env">{JSON.stringify(a.sandbox_policy, null, 2)}</pre>
          </section>
        ) : current.id === "runs" ? (
          <RunsTab agentId={id} kind={a.kind} runs={runs} can={can} />
        ) : current.id === "conversations" ? (
          <ConversationsTab agentId={id} can={can} />
        ) : current.id === "schedules" ? (
          <SchedulesTab agentId={id} can={can} />
        ) : current.id === "versions" ? (
          <VersionsTab agentId={id} can={can} />
        ) : current.id === "files" ? (
          <FilesTab agentId={id} can={can} />
        ) : current.id === "terminal" ? (
          <Suspense fallback={<Loading />}>
            <TerminalTab agentId={id} canType={can.write} />
          </Suspense>
        ) : current.id === "browser" ? (
          <Suspense fallback={<Loading />}>
            <BrowserTab agentId={id} canType={can.write} />
          </Suspense>
        ) : current.id === "egress" ? (
          <EgressTab agentId={id} />
        ) : current.id === "usage" ? (
          <section>
            <ErrorBox error={usage.error} />
            {usage.data ? (
              <>
                <UseBar
                  label="This agent's home"
                  used={usage.data.workspace_mib}
                  cap={usage.data.max_workspace_mib}
                />
                <UseBar
                  label={`Machine ${usage.data.machine.name}`}
                  used={usage.data.machine.workspace_mib}
                  cap={usage.data.machine.max_workspace_mib}
                />
                <p>
                  As measured after the last generation. The agents' caps on this machine reserve{" "}
                  {mib(usage.data.machine.reserved_mib)} of {mib(usage.data.machine.max_workspace_mib)}. When
                  a home or the machine is over its cap, the next run fails with <code>workspace.full</code>:
                  free space from the Terminal, or raise the cap in Settings.
                </p>
                {a ? <UsageCharts orgId={a.org_id} agentId={id} /> : null}
              </>
            ) : (
              <Loading rows={2} />
            )}
          </section>
        ) : (
          <SettingsTab agent={a} usage={usage.data} can={can} />
        )}
      </div>
    </section>
  );
}
