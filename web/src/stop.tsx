// Stop on a conversation turn going on: cancels the turn's run (POST /api/runs/:id/cancel); the
// thread then shows the turn's end as its event stream tells it.
import { useMutation } from "@tanstack/react-query";
import { warren } from "./api";
import { Action, ErrorBox } from "./ui";
import "./polish.css";

export function StopTurn({ runId }: { runId: string }) {
  const stop = useMutation({ mutationFn: () => warren.runs.cancel(runId) });
  return (
    <>
      <Action
        type="button"
        className="stop"
        onClick={() => stop.mutate()}
        busy={stop.isPending}
        busyLabel="Stopping…"
        disabled={stop.isSuccess}
        aria-label="Stop this turn"
      >
        Stop
      </Action>
      <ErrorBox error={stop.error} />
    </>
  );
}
