// A run's trace as a readable timeline, line by line as `warren runs trace` prints it (the
// lines are the SDK's traceEntries): the time since the start, the event's short name, what it
// says. Each line opens to the event whole.
import { traceEntries, traceSummary, type Run, type TraceEvent } from "warren/sdk";
import "./polish.css";

export function TraceTimeline({ events, run }: { events: readonly TraceEvent[]; run?: Run | undefined }) {
  const byId = new Map(events.map((e) => [e.id, e]));
  return (
    <>
      <ol className="timeline trace" data-testid="trace">
        {traceEntries(events).map((t) => {
          const e = byId.get(t.id);
          return (
            <li key={t.id} className={`ev ev-${t.type}`} data-testid="trace-line">
              <time dateTime={e?.at} title={e ? new Date(e.at).toLocaleString() : undefined}>
                +{t.offset_s.toFixed(3)}s
              </time>
              <b className="trace-name">{t.name}</b>
              <details className="trace-text">
                <summary>{t.text}</summary>
                <pre className="env">{JSON.stringify(e?.data ?? null, null, 2)}</pre>
              </details>
            </li>
          );
        })}
      </ol>
      {run && (
        <p className="sub" data-testid="trace-summary">
          {traceSummary(run)}
        </p>
      )}
    </>
  );
}
