// The live events of a run or a conversation, from the server's event stream (EventSource):
// the browser reconnects by itself after a drop, sending Last-Event-ID, and an event already
// kept is never kept twice.
import { useEffect, useRef, useState } from "react";

/** One event of a stream, as the server sends it in each message's data. */
export interface LiveEvent {
  id: number;
  type: string;
  at: string;
  run_id?: string | null;
  data: unknown;
}

/** The types a message may carry in its `event:` field (EventSource hears only those it listens for). */
const TYPES = [
  "message",
  "started",
  "prompt",
  "models",
  "model_call",
  "completion",
  "tool_call",
  "approval",
  "budget",
  "warning",
  "output",
  "output_dropped",
  "harness",
  "history_cut",
  "interrupted",
  "exit",
  "measurement",
  "refused",
  "closed",
];

export interface Stream {
  events: LiveEvent[];
  /** Open (events arriving), connecting (first time or again after a drop), or ended. */
  state: "connecting" | "open" | "ended";
  /** How many times the connection ended (dropped, or ended by the server). */
  drops: number;
}

/**
 * Follows the event stream at `url` while `enabled`. `over(events)` says when the stream has
 * nothing more to send: a connection that ends then is not opened again.
 */
export function useEventStream(
  url: string,
  enabled: boolean,
  over: (events: readonly LiveEvent[]) => boolean = () => false,
): Stream {
  const [events, setEvents] = useState<LiveEvent[]>([]);
  const [state, setState] = useState<Stream["state"]>("connecting");
  const [drops, setDrops] = useState(0);
  const overRef = useRef(over);
  overRef.current = over;
  useEffect(() => {
    if (!enabled) return;
    setEvents([]);
    setState("connecting");
    const source = new EventSource(url);
    let last = -1;
    let kept: LiveEvent[] = [];
    const onMessage = (m: MessageEvent<string>) => {
      let e: LiveEvent;
      try {
        e = JSON.parse(m.data) as LiveEvent;
      } catch {
        return;
      }
      const id = typeof e.id === "number" ? e.id : Number(m.lastEventId);
      if (!Number.isFinite(id) || id <= last) return;
      last = id;
      const event: LiveEvent = { ...e, id, type: typeof e.type === "string" ? e.type : m.type };
      kept = [...kept, event];
      setEvents(kept);
    };
    for (const t of TYPES) source.addEventListener(t, onMessage);
    source.onopen = () => setState("open");
    source.onerror = () => {
      setDrops((n) => n + 1);
      // ended by the server once everything was sent, or dropped (the browser tries again)
      if (source.readyState === EventSource.CLOSED || overRef.current(kept)) {
        source.close();
        setState("ended");
      } else setState("connecting");
    };
    return () => source.close();
  }, [url, enabled]);
  return { events, state, drops };
}
