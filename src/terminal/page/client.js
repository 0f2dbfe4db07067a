// The browser side of an agent's terminal: connects an xterm.js Terminal to the terminal's
// WebSocket (/api/agents/:id/cli/tty), sends keys and size, draws what the box prints,
// reconnects when the connection drops, and says why the terminal ended. Self-contained
// (no build step): the page of this folder uses it, and so can any page that has an
// xterm.js Terminal.
//
//   const t = connectTerminal(term, { agentId, fit, onState: (state, detail) => ... });
//   t.reconnect(); t.close();
//
// States given to onState: "starting" (POST /cli), "connecting", "open" ({mode: "write" |
// "watch"}), "reconnecting" ({reason, inMs}), "ended" ({reason}: the shell exited, the box
// stopped), "error" ({message}).

const CHUNK = 16 * 1024; // below the server's 64 KiB message limit

/** Keys of xterm's onData (text) and onBinary (bytes as char codes) as bytes. */
const encoder = new TextEncoder();
const binary = (s) => Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff);

/**
 * @param {import("@xterm/xterm").Terminal} term
 * @param {{agentId: string, base?: string, fit?: {fit(): void}, start?: boolean,
 *          autoReconnect?: boolean, onState?: (state: string, detail?: object) => void}} options
 */
export function connectTerminal(term, options) {
  const base = new URL(options.base ?? location.origin);
  const agent = encodeURIComponent(options.agentId);
  const onState = options.onState ?? (() => {});
  const autoReconnect = options.autoReconnect ?? true;
  let ws = null;
  let mode = null;
  let closedByUs = false;
  let retryMs = 500;
  let retryTimer = null;

  const send = (data) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    for (let at = 0; at < data.length; at += CHUNK) ws.send(data.subarray(at, at + CHUNK));
  };
  const sendSize = () => {
    if (ws && ws.readyState === WebSocket.OPEN && mode === "write")
      ws.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
  };
  const subscriptions = [
    term.onData((d) => send(encoder.encode(d))),
    term.onBinary((d) => send(binary(d))),
    term.onResize(() => sendSize()),
  ];
  const onWindowResize = () => options.fit?.fit();
  window.addEventListener("resize", onWindowResize);

  /** Starts the shared shell (and its machine); a viewer may not, and watches instead. */
  async function start() {
    if (options.start === false) return true;
    onState("starting");
    let res;
    try {
      res = await fetch(new URL(`/api/agents/${agent}/cli`, base), { method: "POST" });
    } catch (err) {
      onState("error", { message: `cannot reach the server: ${err.message}` });
      return false;
    }
    if (res.ok) return true;
    const body = await res.json().catch(() => null);
    const code = body?.error?.code;
    if (code === "access.denied") return true; // a viewer: watch what runs
    onState("error", { message: body?.error?.message ?? `the server answered ${res.status}` });
    return false;
  }

  function open() {
    clearTimeout(retryTimer);
    options.fit?.fit();
    const url = new URL(`/api/agents/${agent}/cli/tty`, base);
    url.protocol = base.protocol === "https:" ? "wss:" : "ws:";
    url.searchParams.set("cols", String(term.cols));
    url.searchParams.set("rows", String(term.rows));
    onState("connecting");
    const socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    ws = socket;
    let exit = null;
    let failure = null;
    socket.onmessage = (e) => {
      if (typeof e.data !== "string") {
        term.write(new Uint8Array(e.data));
        return;
      }
      let m;
      try {
        m = JSON.parse(e.data);
      } catch {
        return;
      }
      if (m.type === "attached") {
        retryMs = 500;
        mode = m.mode;
        term.reset(); // the recent screen follows: drawn afresh, on reconnects too
        if (mode === "watch") term.resize(m.cols, m.rows);
        else sendSize();
        onState("open", { mode, shared: m.shared });
      } else if (m.type === "resize" && mode === "watch") {
        term.resize(m.cols, m.rows);
      } else if (m.type === "exit") {
        exit = m;
      } else if (m.type === "error") {
        failure = m;
        term.write(`\r\n\x1b[33m[warren: ${m.message}]\x1b[0m\r\n`);
      }
    };
    socket.onclose = (e) => {
      if (ws !== socket) return;
      ws = null;
      if (closedByUs) return;
      if (exit || (e.code === 1000 && e.reason)) {
        const reason = exit?.reason ?? e.reason;
        term.write(`\r\n\x1b[33m[${reason}]\x1b[0m\r\n`);
        onState("ended", { reason, exitCode: exit?.exit_code ?? null });
        return;
      }
      if (e.code === 1011 || failure) {
        onState("error", { message: failure?.message ?? e.reason ?? "the terminal could not be opened" });
        return;
      }
      if (!autoReconnect) {
        onState("ended", { reason: e.reason || `the connection closed (${e.code})` });
        return;
      }
      const inMs = retryMs;
      retryMs = Math.min(5000, retryMs * 2);
      onState("reconnecting", { reason: e.reason || `the connection dropped (${e.code})`, inMs });
      retryTimer = setTimeout(() => void connect(), inMs);
    };
  }

  async function connect() {
    if (closedByUs) return;
    if (await start()) open();
  }

  void connect();
  return {
    /** This viewer's mode once attached: "write" or "watch". */
    get mode() {
      return mode;
    },
    /** Connects again now (after the terminal ended: starts a new shell). */
    reconnect() {
      closedByUs = false;
      const old = ws;
      ws = null;
      old?.close(1000, "reconnecting");
      void connect();
    },
    /** Leaves the terminal (the shell keeps running) and lets go of the Terminal. */
    close() {
      closedByUs = true;
      clearTimeout(retryTimer);
      ws?.close(1000, "the page closed the terminal");
      window.removeEventListener("resize", onWindowResize);
      for (const s of subscriptions) s.dispose();
    },
  };
}
