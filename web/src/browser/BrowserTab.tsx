// The Browser tab (/agents/:id/browser): the agent's browser as a stream of frames over the
// WebSocket of /api/agents/:id/browser/watch, with the active tab's address and the tabs.
// Opening the tab starts the browser (and wakes its machine) for a role that writes; a viewer
// watches a running one. Frames are JPEG images shown in an <img> from a blob: URL: nothing a
// page serves runs here. Clicks, keys and the wheel over the frame go to the stream; the
// server sends them to the browser for owners, admins and editors and drops a viewer's.
import { useEffect, useRef, useState, type KeyboardEvent, type MouseEvent, type WheelEvent } from "react";
import { BROWSER_KEYS } from "warren/sdk";
import { LiveState } from "../ui";

type State = "connecting" | "open" | "ended" | "error";
interface Tab {
  id: string;
  url: string;
  title: string;
  active: boolean;
}
type Message =
  | { type: "attached"; mode: "write" | "watch" }
  | { type: "viewport"; width: number; height: number }
  | { type: "page"; url: string | null; tabs: Tab[] }
  | { type: "dropped"; reason: string }
  | { type: "error"; code: string; message: string }
  | { type: "ended"; reason: string };

/** The named keys the stream takes; every other key of one character goes as text. */
const KEYS: ReadonlySet<string> = new Set(BROWSER_KEYS);

export function BrowserTab({ agentId, canType }: { agentId: string; canType: boolean }) {
  const [state, setState] = useState<State>("connecting");
  const [text, setText] = useState(canType ? "starting the browser" : "connecting");
  const [mode, setMode] = useState<"write" | "watch" | null>(null);
  const [frame, setFrame] = useState<string | null>(null);
  const [page, setPage] = useState<{ url: string | null; tabs: Tab[] }>({ url: null, tabs: [] });
  const [note, setNote] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  const socket = useRef<WebSocket | null>(null);
  const viewport = useRef<{ width: number; height: number } | null>(null);

  useEffect(() => {
    const proto = window.location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(
      `${proto}//${window.location.host}/api/agents/${encodeURIComponent(agentId)}/browser/watch`,
    );
    ws.binaryType = "blob";
    socket.current = ws;
    let shown: string | null = null;
    let ended: string | null = null;
    let attached = false;
    ws.onmessage = (ev: MessageEvent<Blob | string>) => {
      if (typeof ev.data !== "string") {
        // a frame: an image, shown as one
        const url = URL.createObjectURL(new Blob([ev.data], { type: "image/jpeg" }));
        if (shown) URL.revokeObjectURL(shown);
        shown = url;
        setFrame(url);
        return;
      }
      let m: Message;
      try {
        m = JSON.parse(ev.data) as Message;
      } catch {
        return;
      }
      if (m.type === "attached") {
        attached = true;
        setMode(m.mode);
        setState("open");
        setText(m.mode === "watch" ? "connected, watching" : "connected");
      } else if (m.type === "viewport") viewport.current = { width: m.width, height: m.height };
      else if (m.type === "page") setPage({ url: m.url, tabs: m.tabs });
      else if (m.type === "dropped") setNote(m.reason);
      else if (m.type === "error") {
        if (attached) setNote(`${m.message} (${m.code})`);
        else ended = `${m.message} (${m.code})`;
      } else ended = m.reason;
    };
    ws.onclose = (ev) => {
      if (socket.current !== ws) return;
      socket.current = null;
      const why = ended ?? (ev.reason || `the connection closed (${ev.code})`);
      setState(ev.code === 1000 ? "ended" : "error");
      setText(`ended: ${why}`);
    };
    return () => {
      socket.current = null;
      ws.close(1000, "closed by the client");
      if (shown) URL.revokeObjectURL(shown);
    };
  }, [agentId, attempt]);

  const send = (m: object) => {
    const ws = socket.current;
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
  };
  /** A point of the shown frame in the page's CSS pixels. */
  const at = (e: MouseEvent<HTMLImageElement> | WheelEvent<HTMLImageElement>) => {
    const r = e.currentTarget.getBoundingClientRect();
    const v = viewport.current ?? {
      width: e.currentTarget.naturalWidth,
      height: e.currentTarget.naturalHeight,
    };
    const x = ((e.clientX - r.left) / Math.max(1, r.width)) * v.width;
    const y = ((e.clientY - r.top) / Math.max(1, r.height)) * v.height;
    return { x: Math.max(0, Math.round(x)), y: Math.max(0, Math.round(y)) };
  };
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (KEYS.has(e.key)) send({ type: "key", key: e.key });
    else if ([...e.key].length === 1) send({ type: "text", text: e.key });
    else return;
    e.preventDefault();
  };

  const busy = state === "connecting";
  return (
    <section>
      <p className="sub">
        The agent's own browser, in its box, with its logins. Opening this tab starts it (and wakes the
        machine); the machine stays up for a while after the last input.
        {!canType && " Your role watches: your clicks and keys are not sent."}
      </p>
      <div className="buttons">
        {mode === "watch" && (
          <span className="badge" data-testid="browser-watching">
            watching only
          </span>
        )}
        <LiveState testId="browser-state" state={state} busy={busy} text={text} />
        {state === "open" && mode === "write" && (
          <button type="button" onClick={() => send({ type: "back" })}>
            Back
          </button>
        )}
        {(state === "ended" || state === "error") && (
          <button
            type="button"
            onClick={() => {
              setState("connecting");
              setText("connecting");
              setNote(null);
              setAttempt((n) => n + 1);
            }}
          >
            {canType ? "Open it again" : "Watch again"}
          </button>
        )}
      </div>
      <p>
        <code data-testid="browser-url">{page.url ?? "no page"}</code>
      </p>
      {page.tabs.length > 1 && (
        <ul className="tabs-list" data-testid="browser-tabs">
          {page.tabs.map((t) => (
            <li key={t.id} className={t.active ? "active" : undefined}>
              {t.title || t.url}
            </li>
          ))}
        </ul>
      )}
      {note && (
        <p className="sub" data-testid="browser-note" role="status">
          {note}
        </p>
      )}
      <div
        className="browser-screen"
        data-testid="browser-screen"
        tabIndex={0}
        onKeyDown={onKey}
        aria-label="the agent's browser: click to focus, then type"
      >
        {frame ? (
          <img
            src={frame}
            alt="the agent's browser page"
            data-testid="browser-frame"
            draggable={false}
            onClick={(e) => {
              e.currentTarget.parentElement?.focus();
              send({ type: "click", ...at(e) });
            }}
            onWheel={(e) => send({ type: "scroll", ...at(e), dx: e.deltaX, dy: e.deltaY })}
          />
        ) : (
          <p className="sub">{state === "open" ? "waiting for the first frame" : ""}</p>
        )}
      </div>
    </section>
  );
}
