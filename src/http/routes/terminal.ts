// The agent's terminal: POST /api/agents/:id/cli starts it, GET /api/agents/:id/cli/tty is its
// WebSocket (binary frames: the terminal's bytes both ways; text frames: JSON messages).
import { WebSocket, type RawData } from "ws";
import { idParams } from "../../contract/common.js";
import { TerminalInput, TerminalMessage, TerminalQuery, TerminalReady } from "../../contract/terminal.js";
import type { Attachment, Terminals, TerminalSession, Viewer } from "../../terminal/index.js";
import { route, type AnyRoute } from "../route.js";

function bytesOf(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

/** A WebSocket as a viewer of a terminal. */
function viewerOf(socket: WebSocket, mode: Viewer["mode"]): Viewer {
  const open = () => socket.readyState === WebSocket.OPEN;
  return {
    mode,
    send: (data) => {
      if (open()) socket.send(data, { binary: true });
    },
    message: (m) => {
      if (open()) socket.send(JSON.stringify(m));
    },
    close: (code, reason) => {
      socket.resume(); // a socket paused for flow control must still read the close handshake
      if (open()) socket.close(code, reason);
    },
    get buffered() {
      return socket.bufferedAmount;
    },
    pause: () => socket.pause(),
    resume: () => socket.resume(),
  };
}

/** Joins a WebSocket to its terminal: keys and JSON messages in, the terminal out. */
function connect(terminals: Terminals, socket: WebSocket, a: Attachment): void {
  const viewer = viewerOf(socket, a.mode);
  let session: TerminalSession | null = null;
  let gone = false;
  socket.pause(); // nothing is read before the terminal is there
  socket.on("message", (data, isBinary) => {
    if (!session) return;
    if (isBinary) {
      session.input(viewer, bytesOf(data));
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytesOf(data).toString("utf8"));
    } catch {
      viewer.message({ type: "error", code: "request.invalid", message: "a text frame must be JSON" });
      return;
    }
    const m = TerminalInput.safeParse(parsed);
    if (!m.success) {
      viewer.message({
        type: "error",
        code: "request.invalid",
        message: `a text frame must be {"type":"resize","cols":1-1000,"rows":1-1000} or {"type":"signal","signal":"SIGINT"|...}: ${m.error.issues[0]?.message ?? ""}`,
      });
      return;
    }
    if (m.data.type === "resize") session.resize(viewer, m.data.cols, m.data.rows);
    else session.signal(viewer, m.data.signal);
  });
  socket.on("close", () => {
    gone = true;
    session?.detach(viewer);
  });
  void terminals.open(a, viewer).then((s) => {
    if (!s) {
      socket.resume(); // refused after the upgrade: the close handshake still needs reading
      return;
    }
    if (gone) s.detach(viewer);
    else {
      session = s;
      socket.resume();
    }
  });
}

export function terminalRoutes(terminals: Terminals): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents/:id/cli",
      id: "terminal.start",
      tag: "terminal",
      summary:
        "Start the agent's terminal (and its machine) if it is not running: a login shell in its home, as the agent",
      params: idParams("agt"),
      response: TerminalReady,
      errors: ["access.denied", "box.unavailable", "generation.busy"],
      handler: async ({ who, params }) => {
        await terminals.start(who, params.id);
        return { status: "ready" as const };
      },
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/cli/tty",
      id: "terminal.attach",
      tag: "terminal",
      summary:
        "The agent's terminal as a WebSocket, shared by every viewer (owners, admins, editors type; viewers watch; auditors are refused)",
      params: idParams("agt"),
      query: TerminalQuery,
      status: 101,
      stream: { type: "application/json", schema: TerminalMessage },
      errors: ["access.denied", "origin.refused", "box.unavailable"],
      // the upgrade's checks; what they answer is handed to the socket below
      handler: async ({ who, params, query }) => terminals.authorize(who, params.id, query),
      websocket: (socket, prepared) => connect(terminals, socket, prepared as Attachment),
    }),
  ];
}
