// The terminal's page, /agents/:id/terminal (the operator app's Terminal tab), in a real
// headless Chromium (Debian's, driven by playwright-core) against a real server on real boxes:
// type a command and see its output, resize, reconnect to the same shell, vi and top drawing,
// the box stopping, an unknown agent. Screenshots go to test-results/.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { CHROMIUM, CHROMIUM_FLAGS } from "../support/chromium-flags.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const results = path.join(repo, "test-results");

function skipReason(): string | null {
  const box = boxSkipReason();
  if (box) return box;
  if (!fs.existsSync(CHROMIUM)) return "Debian's chromium is not installed (scripts/setup.sh installs it)";
  return null;
}
const skip = skipReason() ?? false;

describe("the terminal page in Chromium", { skip }, () => {
  let t: TestServer;
  let agent: { id: string; home: string };
  let machine: { id: string };
  let context: BrowserContext;
  let page: Page;
  let profile: string;

  /** What the terminal shows now: its active buffer's lines, the scrollback included. */
  const screen = (): Promise<string> =>
    page.evaluate(() => {
      const term = (globalThis as any).warrenTerminal.term;
      const b = term.buffer.active;
      const lines: string[] = [];
      for (let i = 0; i < b.length; i++) lines.push(b.getLine(i)?.translateToString(true) ?? "");
      return lines.join("\n");
    });
  const waitScreen = async (re: RegExp, timeoutMs = 40_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = await screen();
      if (re.test(text)) return text;
      if (Date.now() > deadline) throw new Error(`no ${re} in the page's terminal:\n${text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const status = () => page.getByTestId("terminal-state");
  const start = () => page.getByRole("button", { name: /^Start (the terminal|it again)$/ }).click();
  const waitStatus = async (re: RegExp) => {
    await page.waitForFunction(
      (src) =>
        new RegExp(src).test(
          (globalThis as any).document.querySelector('[data-testid="terminal-state"]')?.textContent?.trim() ??
            "",
        ),
      re.source,
      { timeout: 30_000 },
    );
  };
  const typeLine = async (s: string) => {
    await page.keyboard.type(s);
    await page.keyboard.press("Enter");
  };
  /**
   * The shell waits for a line: its prompt is on the normal screen (not a full-screen
   * program's) with the cursor right after it. Nothing is typed before that: a program
   * like top flushes what was typed ahead of its exit, and the shell would get the rest.
   */
  const waitPrompt = async (timeoutMs = 40_000): Promise<void> => {
    await page.waitForFunction(
      () => {
        const b = (globalThis as any).warrenTerminal.term.buffer.active;
        if (b.type !== "normal") return false;
        const line = b.getLine(b.baseY + b.cursorY);
        if (!line) return false;
        return (
          /\$ $/.test(line.translateToString(false, 0, b.cursorX)) &&
          line.translateToString(true, b.cursorX) === ""
        );
      },
      undefined,
      { timeout: timeoutMs, polling: 100 },
    );
  };
  /** Types a command line once the shell's prompt is back. */
  const command = async (s: string) => {
    await waitPrompt();
    await typeLine(s);
  };
  const shot = (name: string) => page.screenshot({ path: path.join(results, `terminal-${name}.png`) });

  before(async () => {
    fs.mkdirSync(results, { recursive: true });
    t = await startTestServer({ listen: true });
    const org = (await t.call("POST", "/api/orgs", { name: "page" })).body;
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 256 })).body;
    agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" })).body;
    profile = fs.mkdtempSync(path.join(os.tmpdir(), "warren-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1000, height: 640 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    // the page's WebSockets, kept where a test can drop one (as a network would)
    await page.addInitScript(() => {
      const g = globalThis as any;
      const Native = g.WebSocket;
      g.__sockets = [];
      g.WebSocket = class extends Native {
        constructor(...args: unknown[]) {
          super(...args);
          g.__sockets.push(this);
        }
      };
    });
  });
  after(async () => {
    await context?.close().catch(() => {});
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
    await t?.close();
  });

  test("type a command, see its output", async () => {
    assert.ok(
      fs.existsSync(path.join(repo, "dist/web/index.html")),
      "the app is not built: run `npm run build`",
    );
    await page.goto(`${t.url}/agents/${agent.id}/terminal`);
    await page.getByRole("heading", { name: "a", exact: true }).waitFor();
    await start();
    await waitStatus(/^connected$/);
    await page.getByTestId("terminal").click();
    await command("echo hello-$((6*7)) from $(pwd)");
    await waitScreen(new RegExp(`^hello-42 from ${agent.home}`, "m"));
    await shot("command");
  });

  test("resize: the window's size reaches the shell", async () => {
    const before = await page.evaluate(() => {
      const term = (globalThis as any).warrenTerminal.term;
      return { cols: term.cols as number, rows: term.rows as number };
    });
    await command("stty size");
    await waitScreen(new RegExp(`^${before.rows} ${before.cols}$`, "m"));
    await page.setViewportSize({ width: 640, height: 420 });
    await page.waitForFunction((cols) => (globalThis as any).warrenTerminal.term.cols < cols, before.cols);
    const after = await page.evaluate(() => {
      const term = (globalThis as any).warrenTerminal.term;
      return { cols: term.cols as number, rows: term.rows as number };
    });
    assert.ok(after.cols < before.cols && after.rows < before.rows, JSON.stringify({ before, after }));
    await command("stty size");
    await waitScreen(new RegExp(`^${after.rows} ${after.cols}$`, "m"));
    await shot("resized");
    await page.setViewportSize({ width: 1000, height: 640 });
  });

  test("reconnect: a reload returns to the same shell and its screen", async () => {
    await command("export MARK=kept-across; echo PID=$$");
    const [, pid] = (await waitScreen(/^PID=(\d+)$/m)).match(/^PID=(\d+)$/m) as RegExpMatchArray;
    await page.reload();
    await start();
    await waitStatus(/^connected$/);
    await waitScreen(/hello-42/); // the recent screen, replayed
    await page.getByTestId("terminal").click();
    await command('echo "[$MARK] PID2=$$"');
    await waitScreen(new RegExp(`^\\[kept-across\\] PID2=${pid}$`, "m"));
    await shot("reconnected");
    // the connection drops (not the terminal): the page reconnects by itself to the same shell
    await page.evaluate(() => (globalThis as any).__sockets.at(-1).close(4000, "dropped by the test"));
    await waitStatus(/reconnecting/);
    await waitStatus(/^connected$/);
    await command('echo "[$MARK] PID3=$$"');
    await waitScreen(new RegExp(`^\\[kept-across\\] PID3=${pid}$`, "m"));
  });

  test("full-screen programs draw: vi and top", async () => {
    await command("clear; vi -u NONE notes.txt");
    const vi = await waitScreen(/"notes\.txt" \[New/);
    assert.ok((vi.match(/^~\s*$/gm) ?? []).length > 10, `vi's empty lines:\n${vi}`);
    await page.keyboard.type("iwritten from the page");
    await waitScreen(/^written from the page\s*$/m);
    await shot("vi");
    await page.keyboard.press("Escape");
    await typeLine(":wq");
    await command("cat notes.txt");
    await waitScreen(/^written from the page$/m);
    await command("top -d 1");
    const top = await waitScreen(/PID\s+USER.*%CPU.*COMMAND/);
    assert.match(top, /^top - /m);
    assert.match(top, /Tasks:/);
    await shot("top");
    await page.keyboard.press("q");
    await command("echo top-is-gone");
    await waitScreen(/^top-is-gone$/m);
  });

  test("the box stopping ends the terminal with its reason; Reconnect starts a new shell", async () => {
    assert.equal((await t.call("POST", `/api/machines/${machine.id}/stop`)).status, 200);
    await waitStatus(/^ended: the machine stopped/);
    assert.equal(await status().getAttribute("data-state"), "ended");
    await waitScreen(/\[the machine stopped/);
    await shot("ended");
    await start();
    await waitStatus(/^connected$/);
    await command('echo "[${MARK:-a new shell}]"');
    await waitScreen(/^\[a new shell\]$/m);
  });

  test("an unknown agent says so", async () => {
    await page.goto(`${t.url}/agents/agt_0000000000000000/terminal`);
    const alert = page.getByRole("alert");
    await alert.getByText("agent was not found").waitFor();
    assert.match(await alert.innerText(), /not_found/);
    assert.equal(await page.getByRole("button", { name: "Start the terminal" }).count(), 0);
    await shot("unknown-agent");
  });
});
