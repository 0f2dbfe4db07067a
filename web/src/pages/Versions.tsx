// The agent's Versions tab: every version (when, by whom, current, canary share) with its runs,
// failures and cost side by side; one version's whole spec, read-only; a diff of two versions;
// Make current (the evaluation gate's 409 version.gate said plainly); a canary started,
// changed and ended.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { AgentVersions, Version } from "warren/sdk";
import { describeError, keys, warren, type Can } from "../api";
import { lineDiff } from "../diff";
import { Action, Empty, ErrorBox, Loading, when } from "../ui";

type CanaryRequest = Parameters<AgentVersions["setCanary"]>[0];

const versionKeys = {
  list: (agent: string) => ["versions", agent] as const,
  one: (agent: string, n: number) => ["version", agent, n] as const,
  canary: (agent: string) => ["canary", agent] as const,
};

/** A version's spec as text: what it is made of, without who wrote it or its place now. */
function specText(v: Version): string {
  const {
    agent_id: _a,
    version: _v,
    created_at: _c,
    created_by: _b,
    current: _cur,
    canary_share: _s,
    ...spec
  } = v;
  return JSON.stringify(spec, null, 2);
}

function useVersion(agentId: string, n: number | null) {
  return useQuery({
    queryKey: versionKeys.one(agentId, n ?? 0),
    queryFn: () => warren.agent(agentId).versions.get(n ?? 0),
    enabled: n !== null,
    staleTime: Infinity,
  });
}

function Diff({ agentId, numbers }: { agentId: string; numbers: number[] }) {
  const [from, setFrom] = useState<number | null>(numbers.length > 1 ? (numbers.at(-2) ?? null) : null);
  const [to, setTo] = useState<number | null>(numbers.at(-1) ?? null);
  const a = useVersion(agentId, from);
  const b = useVersion(agentId, to);
  const pick = (value: number | null, set: (n: number) => void, label: string) => (
    <label>
      {label}
      <select name={label.toLowerCase()} value={value ?? ""} onChange={(e) => set(Number(e.target.value))}>
        {numbers.map((n) => (
          <option key={n} value={n}>
            version {n}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <section aria-label="diff of two versions">
      <h2>Diff of two versions</h2>
      {numbers.length < 2 ? (
        <Empty>One version only: there is nothing to compare yet.</Empty>
      ) : (
        <>
          <div className="buttons">
            {pick(from, setFrom, "From")}
            {pick(to, setTo, "To")}
          </div>
          <ErrorBox error={a.error ?? b.error} />
          {a.data && b.data ? (
            <pre className="output diff" data-testid="version-diff">
              {lineDiff(specText(a.data), specText(b.data)).map((l, i) => (
                <div key={i} className={`d-${l.op}`}>
                  {l.op === "add" ? "+ " : l.op === "del" ? "- " : "  "}
                  {l.text}
                </div>
              ))}
            </pre>
          ) : (
            <Loading rows={2} />
          )}
        </>
      )}
    </section>
  );
}

function CanaryForm({
  agentId,
  candidates,
  running,
  can,
}: {
  agentId: string;
  candidates: number[];
  running: { version: number; share: number } | null;
  can: Can;
}) {
  const qc = useQueryClient();
  const [version, setVersion] = useState<number | null>(running?.version ?? candidates.at(-1) ?? null);
  const [share, setShare] = useState(String(running?.share ?? 0.1));
  const set = useMutation({
    mutationFn: (body: CanaryRequest) => warren.agent(agentId).versions.setCanary(body),
    onSuccess: (c) => {
      qc.setQueryData(versionKeys.canary(agentId), c);
      void qc.invalidateQueries({ queryKey: versionKeys.list(agentId) });
    },
  });
  if (!can.write) return null;
  return (
    <form
      className="inline"
      aria-label="canary"
      onSubmit={(e) => {
        e.preventDefault();
        if (version !== null) set.mutate({ version, share: Number(share) });
      }}
    >
      <label>
        Version
        <select
          name="canary_version"
          value={version ?? ""}
          onChange={(e) => setVersion(Number(e.target.value))}
        >
          {candidates.map((n) => (
            <option key={n} value={n}>
              version {n}
            </option>
          ))}
        </select>
      </label>
      <label>
        Share of runs and new conversations (above 0, below 1)
        <input
          name="canary_share"
          type="number"
          min="0.01"
          max="0.99"
          step="0.01"
          value={share}
          onChange={(e) => setShare(e.target.value)}
        />
      </label>
      <Action type="submit" busy={set.isPending} disabled={version === null}>
        {running ? "Change canary" : "Start canary"}
      </Action>
      {running && (
        <Action type="button" busy={set.isPending} onClick={() => set.mutate({})}>
          End canary
        </Action>
      )}
      <ErrorBox error={set.error} />
    </form>
  );
}

export function VersionsTab({ agentId, can }: { agentId: string; can: Can }) {
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: versionKeys.list(agentId),
    queryFn: () =>
      warren
        .agent(agentId)
        .versions.list()
        .then((l) => l.items),
  });
  const canary = useQuery({
    queryKey: versionKeys.canary(agentId),
    queryFn: () => warren.agent(agentId).versions.canary(),
    refetchInterval: 5000,
  });
  const [shown, setShown] = useState<number | null>(null);
  const one = useVersion(agentId, shown);
  const promote = useMutation({
    mutationFn: (n: number) => warren.agent(agentId).versions.makeCurrent(n),
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: versionKeys.list(agentId) });
      void qc.invalidateQueries({ queryKey: versionKeys.canary(agentId) });
      void qc.invalidateQueries({ queryKey: keys.agent(agentId) });
    },
  });
  const gated = promote.error !== null && describeError(promote.error).code === "version.gate";
  const items = list.data ?? [];
  const stats = new Map((canary.data?.stats ?? []).map((s) => [s.version, s]));
  const running = canary.data?.canary ?? null;
  const current = items.find((v) => v.current)?.version;

  return (
    <section>
      <ErrorBox error={list.error ?? canary.error} />
      {/* the table shows with its runs, failures and cost, never with zeros that are only not read yet */}
      {list.isPending || canary.isPending ? (
        <Loading rows={4} />
      ) : items.length === 0 ? (
        <Empty>No versions yet: the first change of the agent's spec writes version 1.</Empty>
      ) : (
        <>
          <p className="sub" data-testid="canary-status">
            {running
              ? `Canary: version ${running.version} takes ${Math.round(running.share * 100)}% of runs and new conversations (sticky by routing key), started by ${running.started_by} ${when(running.started_at)}. Runs, failures and cost count since it started.`
              : "No canary: every run goes to the current version. Runs, failures and cost count every run."}
          </p>
          <table data-testid="versions">
            <thead>
              <tr>
                <th>Version</th>
                <th>Written</th>
                <th>By</th>
                <th>Current</th>
                <th>Canary</th>
                <th>Runs</th>
                <th>Failures</th>
                <th>Cost</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((v) => {
                const s = stats.get(v.version);
                return (
                  <tr key={v.version} data-version={v.version}>
                    <td>{v.version}</td>
                    <td>{when(v.created_at)}</td>
                    <td>{v.created_by ?? "—"}</td>
                    <td>{v.current ? "current" : ""}</td>
                    <td>{v.canary_share !== undefined ? `${Math.round(v.canary_share * 100)}%` : ""}</td>
                    <td>{s?.runs ?? 0}</td>
                    <td>{s?.failures ?? 0}</td>
                    <td>${(s?.usd ?? 0).toFixed(4)}</td>
                    <td>
                      <div className="buttons">
                        <button
                          type="button"
                          onClick={() => setShown(v.version)}
                          aria-pressed={shown === v.version}
                        >
                          View
                        </button>
                        {can.write && !v.current && (
                          <Action
                            type="button"
                            busy={promote.isPending && promote.variables === v.version}
                            onClick={() => promote.mutate(v.version)}
                          >
                            Make current
                          </Action>
                        )}
                      </div>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {promote.error !== null && (
            <div data-testid="promote-error">
              <ErrorBox error={promote.error} />
              {gated && (
                <p className="warn">
                  Version {promote.variables} was not made current: this agent's evaluation gate is on, and
                  the version has no passed evaluation by its suite. Evaluate it first (
                  <code>
                    warren evals run {agentId} --version {promote.variables}
                  </code>
                  ), then make it current.
                </p>
              )}
            </div>
          )}
          <h2>Canary</h2>
          <CanaryForm
            key={running ? `${running.version}:${running.share}` : "none"}
            agentId={agentId}
            candidates={items.filter((v) => v.version !== current).map((v) => v.version)}
            running={running}
            can={can}
          />
          {shown !== null && (
            <section aria-label={`version ${shown}`}>
              <h2>Version {shown}</h2>
              <ErrorBox error={one.error} />
              {one.data ? (
                <pre className="env" data-testid="version-spec">
                  {specText(one.data)}
                </pre>
              ) : (
                <Loading rows={3} />
              )}
            </section>
          )}
          <Diff agentId={agentId} numbers={items.map((v) => v.version)} />
        </>
      )}
    </section>
  );
}
