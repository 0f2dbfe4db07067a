// The agent's browser as people see it: GET /api/agents/:id/browser (its state) and
// GET /api/agents/:id/browser/watch, a WebSocket of its frames (binary: JPEG images) and JSON
// messages (text), where a writer's clicks and keys go back to the browser.
import { WebSocket, type RawData } from "ws";
import { idParams } from "../../contract/common.js";
import {
  BROWSER_WATCH_MAX_MESSAGE_BYTES,
  BrowserStateView,
  BrowserWatchInput,
  BrowserWatchMessage,
} from "../../contract/browser-watch.js";
import type { BrowserWatches, WatchAttachment, Watcher } from "../../browser/watch.js";
import type { Identity } from "../../access/index.js";
import { route, type AnyRoute } from "../route.js";

function textOf(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data).toString("utf8");
}

function watcherOf(socket: WebSocket, a: WatchAttachment, who: Identity): Watcher {
  const open = () => socket.readyState === WebSocket.OPEN;
  return {
    mode: a.mode,
    who,
    frame: (jpeg) => {
      if (open()) socket.send(jpeg, { binary: true });
    },
    message: (m) => {
      if (open()) socket.send(JSON.stringify(m));
    },
    close: (code, reason) => {
      if (open()) socket.close(code, reason);
    },
    get buffered() {
      return socket.bufferedAmount;
    },
  };
}

function connect(watches: BrowserWatches, socket: WebSocket, a: WatchAttachment, who: Identity): void {
  const w = watcherOf(socket, a, who);
  let joined = false;
  let gone = false;
  socket.on("message", (data, isBinary) => {
    if (!joined) return;
    const raw = textOf(data);
    if (isBinary || Buffer.byteLength(raw) > BROWSER_WATCH_MAX_MESSAGE_BYTES) {
      w.message({
        type: "error",
        code: "request.invalid",
        message: `a message must be a JSON text frame of at most ${BROWSER_WATCH_MAX_MESSAGE_BYTES} bytes`,
      });
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      w.message({ type: "error", code: "request.invalid", message: "a text frame must be JSON" });
      return;
    }
    const m = BrowserWatchInput.safeParse(parsed);
    if (!m.success) {
      w.message({
        type: "error",
        code: "request.invalid",
        message: `a text frame must be {"type":"click","x","y"}, {"type":"key","key"}, {"type":"text","text"}, {"type":"scroll","x","y","dx","dy"} or {"type":"back"}: ${m.error.issues[0]?.message ?? ""}`,
      });
      return;
    }
    void watches.input(a, w, m.data);
  });
  socket.on("close", () => {
    gone = true;
    if (joined) watches.leave(a, w);
  });
  void watches.open(a, w).then((ok) => {
    if (!ok) return;
    joined = true;
    if (gone) watches.leave(a, w);
  });
}

export function browserWatchRoutes(watches: BrowserWatches): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/agents/:id/browser",
      id: "browser.state",
      tag: "browser",
      summary: "The agent's browser: whether it runs, the active tab's address and its tabs",
      params: idParams("agt"),
      response: BrowserStateView,
      errors: ["access.denied"],
      handler: async ({ who, params }) => watches.state(who, params.id),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/browser/watch",
      id: "browser.watch",
      tag: "browser",
      summary:
        "The agent's browser as a WebSocket: its frames (binary, JPEG) and page (JSON); owners, admins and editors click and type into it (and start it); viewers watch; auditors are refused",
      params: idParams("agt"),
      status: 101,
      stream: { type: "application/json", schema: BrowserWatchMessage },
      errors: ["access.denied", "origin.refused", "box.unavailable"],
      handler: async ({ who, params }) => ({ a: await watches.authorize(who, params.id), who }),
      websocket: (socket, prepared) => {
        const p = prepared as { a: WatchAttachment; who: Identity };
        connect(watches, socket, p.a, p.who);
      },
    }),
  ];
}
