// `warren shell` driven under a real pseudo-terminal: tmux runs the built CLI against a real
// server on real boxes, send-keys types, capture-pane reads the screen.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { builtCli } from "../support/serve.js";
import { startTestServer, type TestServer } from "../support/server.js";

function skipReason(): string | null {
  const box = boxSkipReason();
  if (box) return box;
  if (!fs.existsSync("/usr/bin/tmux")) return "tmux is not installed (scripts/setup.sh installs it)";
  if (!fs.existsSync(builtCli)) return "the CLI is not built (npm run build)";
  return null;
}
const skip = skipReason() ?? false;

describe("warren shell under a real terminal", { skip }, () => {
  let t: TestServer;
  let agent: { id: string; home: string };
  // a tmux server of this test's own (its own socket), ended in after()
  const socket = `warren-shell-${crypto.randomBytes(4).toString("hex")}`;
  const tmux = (...args: string[]) => execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });
  const screen = (s: string) => tmux("capture-pane", "-p", "-J", "-t", s, "-S", "-200");
  const waitScreen = async (s: string, re: RegExp, timeoutMs = 20_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const text = screen(s);
      if (re.test(text)) return text;
      if (Date.now() > deadline) throw new Error(`no ${re} on the screen of ${s}:\n${text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const keys = (s: string, ...k: string[]) => tmux("send-keys", "-t", s, ...k);
  const start = (s: string, args: string) =>
    tmux(
      "new-session",
      "-d",
      "-s",
      s,
      "-x",
      "100",
      "-y",
      "30",
      `${process.execPath} ${builtCli} --url ${t.url} ${args}; echo "EXIT=$?"; sleep 600`,
    );

  before(async () => {
    t = await startTestServer({ listen: true });
    const org = (await t.call("POST", "/api/orgs", { name: "shell" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 256 })).body;
    agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
  });
  after(async () => {
    try {
      tmux("kill-server");
    } catch {
      // no session was left
    }
    await t?.close();
  });

  test("attaches: raw mode, the size and its changes, ^C to the remote job, the shell's exit status", async () => {
    start("one", `shell ${agent.id}`);
    await waitScreen("one", /@box:~\$ $/m); // the login shell's prompt: warren is attached, in raw mode
    keys("one", "echo RE''ADY $HOME", "Enter");
    const first = await waitScreen("one", new RegExp(`READY ${agent.home}`));
    // raw mode: only the remote terminal echoes what is typed (a cooked local one would too)
    assert.equal(first.match(/RE''ADY/g)?.length, 1, first);
    keys("one", "stty size", "Enter");
    await waitScreen("one", /^30 100$/m);
    // tmux resizes the window: SIGWINCH to warren, which resizes the remote terminal
    tmux("resize-window", "-t", "one", "-x", "120", "-y", "40");
    // the resize travels tmux → warren → the box: ask again until the shell sees it
    for (let i = 0; ; i++) {
      keys("one", "stty size", "Enter");
      try {
        await waitScreen("one", /^40 120$/m, 3000);
        break;
      } catch (err) {
        if (i >= 10) throw err;
      }
    }
    // ^C reaches the job in the box (raw mode: the byte, the remote line discipline)
    keys("one", "sleep 100", "Enter");
    // ^C once the job runs (before that it would reach the shell, not the job)
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await t.call("POST", `/api/agents/${agent.id}/exec`, {
        command: "pgrep -x sleep >/dev/null && echo running",
      });
      if (r.body.stdout === "running\n") break;
      assert.ok(Date.now() < deadline, "sleep 100 never started");
      await new Promise((r) => setTimeout(r, 100));
    }
    keys("one", "C-c");
    keys("one", "echo rc=$?", "Enter");
    await waitScreen("one", /^rc=130$/m);
    assert.doesNotMatch(screen("one"), /EXIT=/, "^C did not end warren shell");
    keys("one", "exit 7", "Enter");
    await waitScreen("one", /^EXIT=7$/m);
  });

  test("-- CMD runs one interactive command: vi draws, its exit status is the command's own", async () => {
    start("two", `shell ${agent.id} -- vi -u NONE notes.txt`);
    await waitScreen("two", /notes\.txt/);
    keys("two", "i", "written in vi", "Escape", ":wq", "Enter");
    await waitScreen("two", /^EXIT=0$/m);
    const r = await t.call("POST", `/api/agents/${agent.id}/exec`, { argv: ["cat", "notes.txt"] });
    assert.equal(r.body.stdout, "written in vi\n");
    start("three", `shell ${agent.id} -- sh -c 'printf "code? "; read c; exit "$c"'`);
    await waitScreen("three", /code\?/);
    keys("three", "42", "Enter");
    await waitScreen("three", /^EXIT=42$/m);
  });

  test("an unknown agent is a clear error and exit 1", async () => {
    start("four", "shell agt_0000000000000000");
    const text = await waitScreen("four", /^EXIT=\d+$/m);
    assert.match(text, /agent was not found/);
    assert.match(text, /^EXIT=1$/m);
  });
});
