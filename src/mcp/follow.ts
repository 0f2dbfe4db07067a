// Following a run to its end for an MCP tool: its events read in order through the API (the
// same JSON list `warren runs logs` reads), each piece of the model's text and each change of
// status told to the client as a progress notification, until the run's `exit` or its end.
import { isTerminalRunStatus, type Run, type WarrenClient } from "../sdk/index.js";

/** Tells the client how far a tool call got; a no-op when the client asked for no progress. */
export type Progress = (message: string) => Promise<void>;

/** How often the run is looked at while nothing new came, in ms. */
const POLL_MS = 150;

const pause = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/** The text of an `output` event of the model's streamed answer (`{stream: "text", data}`), if it is one. */
function textPiece(type: string, data: unknown): string | undefined {
  if (type !== "output" || typeof data !== "object" || data === null) return undefined;
  const d = data as { stream?: unknown; data?: unknown };
  return d.stream === "text" && typeof d.data === "string" ? d.data : undefined;
}

/**
 * Waits for run `runId` to end, telling `progress` each piece of streamed text and each new
 * status (waiting for an approval, say); answers the ended run. Aborting `signal` stops the
 * wait, not the run.
 */
export async function followRun(
  client: WarrenClient,
  runId: string,
  progress: Progress,
  signal: AbortSignal,
): Promise<Run> {
  let after = 0;
  let status = "";
  for (;;) {
    if (signal.aborted) throw new Error(`stopped waiting for run ${runId}: the call was cancelled`);
    const { items } = await client.runs.events(runId, { after }, { signal });
    let exited = false;
    for (const e of items) {
      after = Math.max(after, e.id);
      const text = textPiece(e.type, e.data);
      if (text !== undefined && text !== "") await progress(text);
      if (e.type === "exit") exited = true;
    }
    const run = await client.runs.get(runId, { signal });
    if (run.status !== status) {
      status = run.status;
      const why = run.waiting ? ` (${run.waiting.reason})` : "";
      if (!isTerminalRunStatus(run.status)) await progress(`[run ${runId} ${run.status}${why}]`);
    }
    if (isTerminalRunStatus(run.status) && (exited || items.length === 0)) return run;
    if (items.length === 0) await pause(POLL_MS, signal);
  }
}
