// The Terminal tab: nothing starts until "Start the terminal" is pressed; then the SDK starts
// the agent's shared shell (POST /api/agents/:id/cli) and xterm.js speaks to its WebSocket
// (/api/agents/:id/cli/tty: the terminal's bytes both ways, JSON messages for size and end).
import "@xterm/xterm/css/xterm.css";
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { useEffect, useRef, useState } from "react";
import type { TerminalConnection } from "warren/sdk";
import { warren } from "../api";
import { Action, ErrorBox } from "../ui";

type State = "idle" | "starting" | "open" | "closed";

export function TerminalTab({ agentId, canType }: { agentId: string; canType: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<State>("idle");
  const [error, setError] = useState<unknown>(null);
  const [ended, setEnded] = useState<string | null>(null);
  const [mode, setMode] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    if (attempt === 0 || !box.current) return;
    const term = new Terminal({ cursorBlink: true, fontSize: 14, lineHeight: 1.2, scrollback: 5000 });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(box.current);
    fit.fit();
    let conn: TerminalConnection | undefined;
    let gone = false;
    setState("starting");
    setError(null);
    setEnded(null);
    const handle = warren.agent(agentId).terminal;
    void (async () => {
      try {
        if (canType) await handle.start();
        if (gone) return;
        conn = await handle.connect({ cols: term.cols, rows: term.rows });
        if (gone) return conn.close();
        const c = conn;
        c.onData((bytes) => term.write(bytes));
        c.onMessage((m) => {
          if (m.type === "attached") setMode(m.mode);
          if (m.type === "resize") term.resize(m.cols, m.rows);
          if (m.type === "exit") setEnded(m.reason);
        });
        void c.closed.then((end) => {
          if (gone) return;
          setState("closed");
          setEnded((prev) => prev ?? (end.reason || `the connection closed (${end.code})`));
        });
        term.onData((d) => c.write(d));
        term.onResize(({ cols, rows }) => c.resize(cols, rows));
        setState("open");
        c.resize(term.cols, term.rows);
        term.focus();
      } catch (err) {
        if (gone) return;
        setError(err);
        setState("closed");
      }
    })();
    const onWindow = () => fit.fit();
    window.addEventListener("resize", onWindow);
    return () => {
      gone = true;
      window.removeEventListener("resize", onWindow);
      conn?.close();
      term.dispose();
    };
  }, [agentId, attempt, canType]);

  return (
    <section>
      <p className="sub">
        A shell in the agent's home on its machine, as the agent, with its port block set and no secret
        values; one shell shared by everyone who opens it. Starting it wakes the machine; the machine stays up
        for a while after the last input.
        {!canType && " Your role watches: your keys are not sent."}
      </p>
      <div className="buttons">
        {state === "idle" || state === "closed" ? (
          <button type="button" onClick={() => setAttempt((n) => n + 1)}>
            {state === "idle" ? (canType ? "Start the terminal" : "Watch the terminal") : "Start it again"}
          </button>
        ) : (
          <Action busy={state === "starting"} busyLabel="Starting the terminal…" disabled>
            Terminal open{mode === "watch" ? " (watching)" : ""}
          </Action>
        )}
        <span data-testid="terminal-state" className="sub">
          {state}
        </span>
      </div>
      <ErrorBox error={error} />
      {ended && <p className="sub">Ended: {ended}</p>}
      <div ref={box} className="terminal" data-testid="terminal" hidden={attempt === 0} />
    </section>
  );
}
