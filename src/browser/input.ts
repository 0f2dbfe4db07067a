// A watcher's input as DevTools commands on the agent's active tab (Input.dispatchMouseEvent,
// Input.dispatchKeyEvent, Input.insertText; back through the tab's navigation history).
import type { TabSession, WatchInput } from "./watch.js";

const KEY_CODES: Record<string, number> = {
  Enter: 13,
  Tab: 9,
  Backspace: 8,
  Delete: 46,
  Escape: 27,
  ArrowLeft: 37,
  ArrowUp: 38,
  ArrowRight: 39,
  ArrowDown: 40,
  Home: 36,
  End: 35,
  PageUp: 33,
  PageDown: 34,
};

/** One input as DevTools commands on the active tab. */
export async function sendInput(s: TabSession, m: WatchInput): Promise<void> {
  switch (m.type) {
    case "click": {
      const at = { x: m.x, y: m.y };
      const button = m.button ?? "left";
      await s.send("Input.dispatchMouseEvent", { type: "mouseMoved", ...at });
      await s.send("Input.dispatchMouseEvent", { type: "mousePressed", ...at, button, clickCount: 1 });
      await s.send("Input.dispatchMouseEvent", { type: "mouseReleased", ...at, button, clickCount: 1 });
      return;
    }
    case "key": {
      const code = KEY_CODES[m.key];
      const base = { key: m.key, code: m.key, windowsVirtualKeyCode: code, nativeVirtualKeyCode: code };
      const text = m.key === "Enter" ? { text: "\r", unmodifiedText: "\r" } : {};
      await s.send("Input.dispatchKeyEvent", {
        type: text.text ? "keyDown" : "rawKeyDown",
        ...base,
        ...text,
      });
      await s.send("Input.dispatchKeyEvent", { type: "keyUp", ...base });
      return;
    }
    case "text":
      await s.send("Input.insertText", { text: m.text });
      return;
    case "scroll":
      await s.send("Input.dispatchMouseEvent", {
        type: "mouseWheel",
        x: m.x,
        y: m.y,
        deltaX: m.dx,
        deltaY: m.dy,
      });
      return;
    case "back": {
      const h = await s.send<{ currentIndex: number; entries: { id: number }[] }>(
        "Page.getNavigationHistory",
      );
      const prev = h.entries[h.currentIndex - 1];
      if (prev) await s.send("Page.navigateToHistoryEntry", { entryId: prev.id });
      return;
    }
  }
}
