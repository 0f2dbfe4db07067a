// The Schedules tab: the agent's standing orders (cron in a time zone, or every N seconds),
// their next slot and failures in a row, why one paused itself; a new one; pause, resume,
// run now, delete.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { Schedule, ScheduleCreateRequest } from "warren/sdk";
import { warren, type Can } from "../api";
import { Link } from "../router";
import { Action, Empty, ErrorBox, Loading, when } from "../ui";

const key = (agentId: string) => ["schedules", agentId] as const;

function timing(s: Schedule): string {
  return s.cron !== null ? `${s.cron} (${s.timezone})` : `every ${s.every_s} s`;
}

function NewSchedule({ agentId, onDone }: { agentId: string; onDone: () => Promise<void> }) {
  const [mode, setMode] = useState<"cron" | "every">("cron");
  const [cron, setCron] = useState("0 9 * * *");
  const [every, setEvery] = useState("3600");
  const [timezone, setTimezone] = useState(Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC");
  const [command, setCommand] = useState("");
  const [input, setInput] = useState("");
  const [overlap, setOverlap] = useState<"skip" | "queue_one" | "allow">("skip");
  const [catchUp, setCatchUp] = useState<"one" | "none">("one");
  const create = useMutation({
    mutationFn: () => {
      const body: ScheduleCreateRequest = {
        ...(mode === "cron" ? { cron: cron.trim(), timezone } : { every_s: Number(every) }),
        ...(command.trim() ? { kind: "command", command } : { kind: "agent" }),
        input,
        overlap,
        catch_up: catchUp,
      };
      return warren.schedules.create(agentId, body);
    },
    onSuccess: onDone,
  });
  return (
    <form
      className="inline"
      aria-label="new schedule"
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <label>
        Fires
        <select
          name="schedule_mode"
          value={mode}
          onChange={(e) => setMode(e.target.value as "cron" | "every")}
        >
          <option value="cron">by cron</option>
          <option value="every">every N seconds</option>
        </select>
      </label>
      {mode === "cron" ? (
        <>
          <label>
            Cron
            <input name="schedule_cron" value={cron} onChange={(e) => setCron(e.target.value)} required />
          </label>
          <label>
            Time zone
            <input name="schedule_timezone" value={timezone} onChange={(e) => setTimezone(e.target.value)} />
          </label>
        </>
      ) : (
        <label>
          Seconds
          <input
            name="schedule_every"
            type="number"
            min={1}
            value={every}
            onChange={(e) => setEvery(e.target.value)}
            required
          />
        </label>
      )}
      <label className="grow">
        Command
        <input
          name="schedule_command"
          value={command}
          onChange={(e) => setCommand(e.target.value)}
          placeholder="empty: the agent runs by its kind on the input"
        />
      </label>
      <label className="grow">
        Input
        <input name="schedule_input" value={input} onChange={(e) => setInput(e.target.value)} />
      </label>
      <label>
        Overlap
        <select
          name="schedule_overlap"
          value={overlap}
          onChange={(e) => setOverlap(e.target.value as typeof overlap)}
        >
          <option value="skip">skip</option>
          <option value="queue_one">queue one</option>
          <option value="allow">allow</option>
        </select>
      </label>
      <label>
        Missed fires
        <select
          name="schedule_catch_up"
          value={catchUp}
          onChange={(e) => setCatchUp(e.target.value as typeof catchUp)}
        >
          <option value="one">one run</option>
          <option value="none">none</option>
        </select>
      </label>
      <Action type="submit" busy={create.isPending} busyLabel="Scheduling…">
        Schedule
      </Action>
      <ErrorBox error={create.error} />
    </form>
  );
}

export function SchedulesTab({ agentId, can }: { agentId: string; can: Can }) {
  const qc = useQueryClient();
  const list = useQuery({
    queryKey: key(agentId),
    queryFn: () => warren.schedules.list(agentId).then((l) => l.items),
    refetchInterval: 5000,
  });
  const refresh = () => qc.invalidateQueries({ queryKey: key(agentId) });
  const act = useMutation({
    mutationFn: async ({ id, what }: { id: string; what: "pause" | "resume" | "trigger" | "delete" }) => {
      if (what === "trigger") return (await warren.schedules.trigger(id)).run_id;
      if (what === "delete") await warren.schedules.delete(id);
      else await warren.schedules.update(id, { paused: what === "pause" });
      return null;
    },
    onSuccess: refresh,
  });
  return (
    <section>
      {can.write && <NewSchedule agentId={agentId} onDone={refresh} />}
      <ErrorBox error={list.error ?? act.error} />
      {typeof act.data === "string" && (
        <p role="status">
          Started <Link href={`/agents/${agentId}/runs/${act.data}`}>{act.data}</Link>.
        </p>
      )}
      {list.isPending ? (
        <Loading />
      ) : list.data?.length === 0 ? (
        <Empty>
          No schedules.{" "}
          {can.write ? "Add one above: each fire is a run of the agent." : "An editor can add one."}
        </Empty>
      ) : (
        <table data-testid="schedules">
          <thead>
            <tr>
              <th>When</th>
              <th>Runs</th>
              <th>Next</th>
              <th>Last</th>
              <th>Failures</th>
              <th>Policies</th>
              {can.write && <th />}
            </tr>
          </thead>
          <tbody>
            {list.data?.map((s) => (
              <tr key={s.id}>
                <td className="clip" title={s.id}>
                  {s.name || timing(s)}
                  {s.name && <small> {timing(s)}</small>}
                </td>
                <td className="clip">
                  {s.kind === "command" ? (s.command ?? s.argv?.join(" ")) : "the agent"}
                </td>
                <td>{s.paused ? <span title={s.paused_reason ?? ""}>paused</span> : when(s.next_fire_at)}</td>
                <td>{when(s.last_fired_at)}</td>
                <td title={s.last_error ?? s.paused_reason ?? ""}>
                  {s.failures}
                  {s.paused_reason && <small> {s.paused_reason}</small>}
                </td>
                <td>
                  {s.overlap}, catch-up {s.catch_up}
                  {s.skipped > 0 && <small> ({s.skipped} skipped)</small>}
                </td>
                {can.write && (
                  <td>
                    <button
                      type="button"
                      onClick={() => act.mutate({ id: s.id, what: s.paused ? "resume" : "pause" })}
                    >
                      {s.paused ? "Resume" : "Pause"}
                    </button>{" "}
                    <button type="button" onClick={() => act.mutate({ id: s.id, what: "trigger" })}>
                      Run now
                    </button>{" "}
                    <button type="button" onClick={() => act.mutate({ id: s.id, what: "delete" })}>
                      Delete
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
