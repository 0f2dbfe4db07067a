// `/agents/:id/runs/:run_id`: one run: status and output live (its events as the server sends
// them, from the run's event stream), its trace as a timeline, its receipt.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { isTerminalRunStatus, type Run } from "warren/sdk";
import { keys, useCan, warren } from "../api";
import { Link, useTitle } from "../router";
import { useEventStream } from "../stream";
import { Markdown } from "../markdown";
import { TraceTimeline } from "../trace";
import { Action, bytes, Empty, ErrorBox, Loading, StatusBadge, when } from "../ui";
import { RunApprovals } from "./Approvals";

export function RunPage({ agentId, runId }: { agentId: string; runId: string }) {
  const qc = useQueryClient();
  const agent = useQuery({ queryKey: keys.agent(agentId), queryFn: () => warren.agents.get(agentId) });
  const can = useCan(agent.data?.org_id);
  // the trace streams to whoever may see it; the run's record is read again when the stream
  // says it changed (started, exit), and asked for until it shows the end the stream told
  const live = agent.data !== undefined && can.inspect;
  // over once the exit came or the record says it ended (a run cancelled before it started has no exit)
  const trace = useEventStream(`/api/runs/${encodeURIComponent(runId)}/events`, live, (events) => {
    const known = qc.getQueryData<Run>(keys.run(runId));
    return (
      events.some((e) => e.type === "exit") || (known !== undefined && isTerminalRunStatus(known.status))
    );
  });
  const exited = trace.events.some((e) => e.type === "exit");
  const run = useQuery({
    queryKey: keys.run(runId),
    queryFn: () => warren.runs.get(runId),
    refetchInterval: (q) =>
      q.state.data && isTerminalRunStatus(q.state.data.status) ? false : live && !exited ? false : 1000,
  });
  const r = run.data;
  useTitle(`Run ${runId}`);
  const ended = r ? isTerminalRunStatus(r.status) : false;
  const started = trace.events.some((e) => e.type === "started");
  // the record is read again when the stream says it changed, or when the server ended the stream
  useEffect(() => {
    if (started || exited || trace.drops > 0) void qc.invalidateQueries({ queryKey: keys.run(runId) });
  }, [started, exited, trace.drops, runId, qc]);
  const cancel = useMutation({
    mutationFn: () => warren.runs.cancel(runId),
    onSuccess: (next) => qc.setQueryData(keys.run(runId), next),
  });
  useEffect(() => {
    if (ended) void qc.invalidateQueries({ queryKey: keys.runs(agentId) });
  }, [ended, agentId, qc]);
  // what it printed; the model's text as it streams (stream "text") while nothing is printed yet,
  // each model step's text apart from the next (a blank line between), never glued together
  const pieces = (stream: (s: unknown) => boolean) => {
    let out = "";
    let step: unknown;
    for (const e of trace.events) {
      const d = e.data as { stream?: unknown; data?: unknown; step?: unknown } | null;
      if (e.type !== "output" || !stream(d?.stream) || typeof d?.data !== "string") continue;
      if (out !== "" && d.step !== step) out += out.endsWith("\n") ? "\n" : "\n\n";
      step = d.step;
      out += d.data;
    }
    return out;
  };
  const liveOutput = pieces((s) => s !== "text") || pieces((s) => s === "text");

  return (
    <section>
      <p className="crumbs">
        <Link href={`/agents/${agentId}`}>{agent.data?.name ?? "agent"}</Link> /{" "}
        <Link href={`/agents/${agentId}/runs`}>runs</Link> /
      </p>
      <h1>
        Run <code>{runId}</code> {r && <StatusBadge status={r.status} />}
      </h1>
      <ErrorBox error={run.error} />
      {!r ? (
        <Loading rows={6} />
      ) : (
        <>
          <p className="sub" data-testid="run-status" aria-live="polite">
            {r.status}
            {r.status_reason ? `: ${r.status_reason}` : ""}
            {r.exit_code !== null ? ` · exit ${r.exit_code}` : ""} ·{" "}
            <code>{r.argv.length ? r.argv.join(" ") : `${r.kind} run`}</code>
          </p>
          {r.status === "queued" && r.status_reason && (
            <details className="sub" data-testid="run-why" open>
              <summary>Why?</summary>
              {r.status_reason}
            </details>
          )}
          {can.write && !ended && (
            <Action
              type="button"
              onClick={() => cancel.mutate()}
              busy={cancel.isPending}
              busyLabel="Cancelling…"
            >
              Cancel run
            </Action>
          )}
          <ErrorBox error={cancel.error} />
          <RunApprovals runId={runId} can={can} live={!ended} />
          {r.usage && (
            <p className="sub" data-testid="run-usage">
              {r.usage.steps} steps · {r.usage.tool_calls} tool calls ({r.usage.tool_refusals} refused) ·{" "}
              {r.usage.tokens_in} tokens in, {r.usage.tokens_out} out · ${r.usage.usd.toFixed(4)}
            </p>
          )}
          <h2>Output</h2>
          {r.output_withheld ? (
            <Empty>Your role (auditor) sees the record of a run without its output or trace.</Empty>
          ) : ended && r.kind !== "command" && r.output ? (
            // an agent's answer, drawn as Markdown (a command's output stays as printed)
            <Markdown text={r.output} className="answer" testId="run-output" />
          ) : (
            <pre className="output" data-testid="run-output">
              {ended ? r.output || liveOutput || "(no output)" : liveOutput || "(waiting for output…)"}
            </pre>
          )}
          {can.inspect && (
            <>
              <h2>Trace</h2>
              {trace.events.length === 0 ? (
                <Empty>No events yet: they appear as the run goes.</Empty>
              ) : (
                <TraceTimeline events={trace.events} run={ended ? r : undefined} />
              )}
            </>
          )}
          <h2>Receipt</h2>
          {r.receipt ? (
            <dl className="spec" data-testid="receipt">
              <dt>Ran</dt>
              <dd>
                <code>{r.receipt.argv.length ? r.receipt.argv.join(" ") : `${r.receipt.kind} run`}</code> as
                uid {r.receipt.uid}
              </dd>
              <dt>Server version</dt>
              <dd>{r.receipt.server_version}</dd>
              <dt>Time</dt>
              <dd>
                {when(r.receipt.started_at)} → {when(r.receipt.ended_at)} ({r.receipt.duration_ms} ms)
              </dd>
              <dt>Exit</dt>
              <dd>{r.receipt.exit_code ?? r.receipt.signal ?? "—"}</dd>
              <dt>CPU, peak memory</dt>
              <dd>
                {r.receipt.cpu_seconds ?? "—"} s, {bytes(r.receipt.peak_memory_bytes)}
              </dd>
              <dt>Output</dt>
              <dd>
                {bytes(r.receipt.stdout_bytes)} stdout, {bytes(r.receipt.stderr_bytes)} stderr
              </dd>
              <dt>Home before, after</dt>
              <dd>
                {r.receipt.disk_before_mib ?? "—"} → {r.receipt.disk_after_mib ?? "—"} MiB
              </dd>
            </dl>
          ) : (
            <Empty>The receipt is written when the run ends.</Empty>
          )}
        </>
      )}
    </section>
  );
}
