// The Runs tab: the agent's runs (live while one goes on) and a new command run.
import { useMutation, useQueryClient, type UseQueryResult } from "@tanstack/react-query";
import { useState } from "react";
import type { AgentKind, Run } from "warren/sdk";
import { keys, warren, type Can } from "../api";
import { Link, navigate } from "../router";
import { Action, Empty, ErrorBox, Loading, StatusBadge, when } from "../ui";

export function RunsTab({
  agentId,
  kind,
  runs,
  can,
}: {
  agentId: string;
  kind: AgentKind;
  runs: UseQueryResult<Run[]>;
  can: Can;
}) {
  const qc = useQueryClient();
  const [command, setCommand] = useState("");
  const [input, setInput] = useState("");
  const start = useMutation({
    mutationFn: (agentRun: boolean) =>
      agentRun
        ? warren.runs.create(agentId, { kind: "agent", input })
        : warren.runs.create(agentId, { command }),
    onSuccess: async (run) => {
      qc.setQueryData(keys.run(run.id), run);
      await qc.invalidateQueries({ queryKey: keys.runs(agentId) });
      navigate(`/agents/${agentId}/runs/${run.id}`);
    },
  });
  return (
    <section>
      {can.write && kind !== "command" && (
        <form
          className="inline"
          onSubmit={(e) => {
            e.preventDefault();
            start.mutate(true);
          }}
        >
          <label className="grow">
            Input for the {kind} agent
            <textarea
              name="run_input"
              rows={2}
              value={input}
              onChange={(e) => setInput(e.target.value)}
              required
            />
          </label>
          <Action type="submit" busy={start.isPending && start.variables} busyLabel="Starting…">
            Start agent run
          </Action>
        </form>
      )}
      {can.write && (
        <form
          className="inline"
          onSubmit={(e) => {
            e.preventDefault();
            start.mutate(false);
          }}
        >
          <label className="grow">
            Command
            <input
              name="run_command"
              value={command}
              onChange={(e) => setCommand(e.target.value)}
              placeholder="e.g. uname -a; ls -la"
              required
            />
          </label>
          <Action type="submit" busy={start.isPending && !start.variables} busyLabel="Starting…">
            Start run
          </Action>
          <ErrorBox error={start.error} />
        </form>
      )}
      <ErrorBox error={runs.error} />
      {runs.isPending ? (
        <Loading />
      ) : runs.data?.length === 0 ? (
        <Empty>
          No runs yet.{" "}
          {can.write
            ? "Start one above: a command that runs in the agent's box and leaves a record."
            : "An editor can start one."}
        </Empty>
      ) : (
        <table data-testid="runs">
          <thead>
            <tr>
              <th>Run</th>
              <th>Status</th>
              <th>Command</th>
              <th>Started</th>
            </tr>
          </thead>
          <tbody>
            {runs.data?.map((r) => (
              <tr key={r.id}>
                <td>
                  <Link href={`/agents/${agentId}/runs/${r.id}`}>
                    <code>{r.id}</code>
                  </Link>
                </td>
                <td>
                  <StatusBadge status={r.status} />
                </td>
                <td className="clip">
                  <code>{r.argv.join(" ")}</code>
                </td>
                <td>{when(r.started_at ?? r.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
