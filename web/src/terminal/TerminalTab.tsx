// The Terminal tab: nothing starts until "Start the terminal" is pressed; then the agent's
// terminal is started (POST /api/agents/:id/cli) and xterm.js speaks to its WebSocket
// (/api/agents/:id/cli/tty: binary frames both ways, a JSON text frame resizes).
import "@xterm/xterm/css/xterm.css";
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { useEffect, useRef, useState } from "react";
import { WarrenApiError } from "warren/sdk";
import { Action, ErrorBox } from "../ui";

type State = "idle" | "starting" | "open" | "closed";

async function startTerminal(agentId: string): Promise<void> {
  const res = await fetch(`/api/agents/${encodeURIComponent(agentId)}/cli`, {
    method: "POST",
    headers: { accept: "application/json" },
  });
  if (res.ok) return;
  const body = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
  throw new WarrenApiError(
    res.status,
    (body?.error?.code ?? `http.${res.status}`) as never,
    body?.error?.message ?? res.statusText,
  );
}

export function TerminalTab({ agentId }: { agentId: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<State>("idle");
  const [error, setError] = useState<unknown>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    if (attempt === 0 || !box.current) return;
    const term = new Terminal({ cursorBlink: true, fontSize: 14, convertEol: false, scrollback: 5000 });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(box.current);
    fit.fit();
    let ws: WebSocket | undefined;
    let gone = false;
    const enc = new TextEncoder();
    setState("starting");
    setError(null);
    startTerminal(agentId)
      .then(() => {
        if (gone) return;
        const proto = location.protocol === "https:" ? "wss:" : "ws:";
        ws = new WebSocket(`${proto}//${location.host}/api/agents/${encodeURIComponent(agentId)}/cli/tty`);
        ws.binaryType = "arraybuffer";
        const resize = () =>
          ws?.readyState === WebSocket.OPEN &&
          ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
        ws.onopen = () => {
          setState("open");
          resize();
          term.focus();
        };
        ws.onmessage = (e) =>
          term.write(typeof e.data === "string" ? e.data : new Uint8Array(e.data as ArrayBuffer));
        ws.onclose = () => !gone && setState("closed");
        term.onData((d) => ws?.readyState === WebSocket.OPEN && ws.send(enc.encode(d)));
        term.onResize(resize);
      })
      .catch((err: unknown) => {
        if (gone) return;
        setError(err);
        setState("closed");
      });
    const onWindow = () => fit.fit();
    window.addEventListener("resize", onWindow);
    return () => {
      gone = true;
      window.removeEventListener("resize", onWindow);
      ws?.close();
      term.dispose();
    };
  }, [agentId, attempt]);

  return (
    <section>
      <p className="sub">
        A shell in the agent's home on its machine, as the agent, with its port block set and no secret
        values. Starting it wakes the machine; the box stays up for a while after the last input.
      </p>
      <div className="buttons">
        {state === "idle" || state === "closed" ? (
          <button type="button" onClick={() => setAttempt((n) => n + 1)}>
            {state === "idle" ? "Start the terminal" : "Start it again"}
          </button>
        ) : (
          <Action busy={state === "starting"} busyLabel="Starting the terminal…" disabled>
            Terminal open
          </Action>
        )}
        <span data-testid="terminal-state" className="sub">
          {state}
        </span>
      </div>
      <ErrorBox error={error} />
      <div ref={box} className="terminal" data-testid="terminal" hidden={attempt === 0} />
    </section>
  );
}
