// The Terminal tab (and the page /agents/:id/terminal): nothing starts until "Start the
// terminal" is pressed; then the SDK starts the agent's shared shell (POST /api/agents/:id/cli;
// a viewer watches instead) and xterm.js speaks to its WebSocket (/api/agents/:id/cli/tty).
// It follows the window's size, reconnects by itself when the connection drops (the screen
// comes back from the replay), and says why the terminal ended.
import "@xterm/xterm/css/xterm.css";
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { useEffect, useRef, useState } from "react";
import type { TerminalConnection } from "warren/sdk";
import { describeError, warren } from "../api";
import { LiveState } from "../ui";

type State = "idle" | "starting" | "connecting" | "open" | "reconnecting" | "ended" | "error";

export function TerminalTab({ agentId, canType }: { agentId: string; canType: boolean }) {
  const box = useRef<HTMLDivElement>(null);
  const [state, setState] = useState<State>("idle");
  const [text, setText] = useState("not started");
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    if (attempt === 0 || !box.current) return;
    const term = new Terminal({ cursorBlink: true, fontSize: 14, lineHeight: 1.2, scrollback: 5000 });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(box.current);
    fit.fit();
    // for people debugging the page (and its tests): the terminal itself
    (window as unknown as { warrenTerminal?: unknown }).warrenTerminal = { term };
    const say = (s: State, t: string) => {
      setState(s);
      setText(t);
    };
    let conn: TerminalConnection | undefined;
    let gone = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    const handle = warren.agent(agentId).terminal;
    term.onData((d) => conn?.write(d));
    term.onResize(({ cols, rows }) => conn?.resize(cols, rows));

    const connect = async (again: boolean) => {
      try {
        if (!again && canType) {
          say("starting", "starting the terminal");
          await handle.start();
        }
        if (gone) return;
        if (!again) say("connecting", "connecting");
        const c = await handle.connect({ cols: term.cols, rows: term.rows });
        if (gone) return c.close();
        conn = c;
        let ended: string | null = null;
        c.onData((bytes) => term.write(bytes));
        c.onMessage((m) => {
          if (m.type === "attached") say("open", m.mode === "watch" ? "watching (read-only)" : "connected");
          if (m.type === "resize") term.resize(m.cols, m.rows);
          if (m.type === "exit") ended = m.reason;
        });
        void c.closed.then((end) => {
          if (gone || conn !== c) return;
          conn = undefined;
          if (end.code === 1000 || ended) {
            const why = ended ?? (end.reason || "the terminal ended");
            term.write(`\r\n[${why}]\r\n`);
            say("ended", `ended: ${why}`);
            return;
          }
          // the connection dropped, not the terminal: back to the same shell
          say("reconnecting", `${end.reason || `the connection closed (${end.code})`}; reconnecting`);
          retry = setTimeout(() => void connect(true), 500);
        });
        c.resize(term.cols, term.rows);
        term.focus();
      } catch (err) {
        if (gone) return;
        const { code, message } = describeError(err);
        say("error", `${message} (${code})`);
      }
    };
    void connect(false);
    const onWindow = () => fit.fit();
    window.addEventListener("resize", onWindow);
    return () => {
      gone = true;
      clearTimeout(retry);
      window.removeEventListener("resize", onWindow);
      conn?.close();
      term.dispose();
    };
  }, [agentId, attempt, canType]);

  const busy = state === "starting" || state === "connecting" || state === "reconnecting";
  return (
    <section>
      <p className="sub">
        A shell in the agent's home on its machine, as the agent, with its port block set and no secret
        values; one shell shared by everyone who opens it. Starting it wakes the machine; the machine stays up
        for a while after the last input.
        {!canType && " Your role watches: your keys are not sent."}
      </p>
      <div className="buttons">
        {state === "idle" || state === "ended" || state === "error" ? (
          <button type="button" onClick={() => setAttempt((n) => n + 1)}>
            {state === "idle"
              ? canType
                ? "Start the terminal"
                : "Watch the terminal"
              : canType
                ? "Start it again"
                : "Watch again"}
          </button>
        ) : null}
        <LiveState testId="terminal-state" state={state} busy={busy} text={text} />
      </div>
      <div ref={box} className="terminal" data-testid="terminal" hidden={attempt === 0} />
    </section>
  );
}
