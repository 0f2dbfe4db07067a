// `warren chat` as a person would use it from a shell, against a real server (PGlite, real
// boxes) and an assistant on the scripted model: the CLI is a child process whose stdin is a
// pipe, written a line at a time; then the conversation is read, continued and closed.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { ALLOW_READS, putHomeFile, putNotesHome } from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { startHeldModel, type HeldModel } from "../support/held-model.js";
import { builtins, makeAgent, orgAndMachine } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

let t: TestServer;
let held: HeldModel;
/** A model whose answers are streamed, text and tool calls, as its provider's wire has them. */
let fake: FakeModelServer;
let agentId = "";
let where = { org_id: "", machine_id: "" };

before(async () => {
  held = await startHeldModel("Tea is served ", "in the garden.");
  fake = await startFakeOpenAI();
  // the models' ports, and nothing else of this host
  t = await startTestServer({ listen: true, env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(held, fake) } });
  const { org, machine } = await orgAndMachine(t.call, "chat", { name: "chat-m" });
  where = { org_id: org.id, machine_id: machine.id };
  agentId = (
    await makeAgent(t.call, where, { name: "helper", tools: builtins("read_file"), tool_policy: ALLOW_READS })
  ).id;
  // the model's answers across the whole conversation: a turn's answers count on from the last
  await putNotesHome(
    (p, data) => putHomeFile(t, agentId, p, data),
    ["The notes say: tea at five.", "Five o'clock, as the notes said.", "Goodbye.", "Noted."],
  );
});

after(async () => {
  try {
    await t?.close();
  } finally {
    await held?.close();
    await fake?.close();
  }
});

interface Chat {
  /** Resolves when stdout holds `text`. */
  saw(text: string | RegExp): Promise<void>;
  write(line: string): void;
  end(): void;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** `warren ARGS...` as a child process, its stdin a pipe. */
function warren(args: string[]): Chat {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(repo, "src/cli/main.ts"), ...args], {
    cwd: repo,
    env: { ...process.env, WARREN_URL: t.url ?? "" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
    for (const w of waiters) w();
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => {
      for (const w of waiters) w();
      resolve({ code, stdout, stderr });
    }),
  );
  after(() => {
    if (child.exitCode === null && child.pid) process.kill(child.pid, "SIGKILL");
  });
  return {
    saw: (text) =>
      new Promise<void>((resolve, reject) => {
        // a condition with a deadline: what was printed is the failure's message
        const deadline = setTimeout(
          () => finish(new Error(`warren did not print ${String(text)} in 60 s:\n${stdout}\n${stderr}`)),
          60_000,
        );
        const finish = (err?: Error) => {
          waiters.delete(check);
          clearTimeout(deadline);
          if (err) reject(err);
          else resolve();
        };
        const check = () => {
          if (typeof text === "string" ? stdout.includes(text) : text.test(stdout)) finish();
          else if (child.exitCode !== null)
            finish(new Error(`warren exited ${child.exitCode} first:\n${stdout}\n${stderr}`));
        };
        waiters.add(check);
        check();
      }),
    write: (line) => child.stdin.write(`${line}\n`),
    end: () => child.stdin.end(),
    done,
  };
}

describe("warren chat", { concurrency: false }, () => {
  let conversationId = "";

  test("a thread from a pipe: each line a message, each answer streamed before the next is sent", async () => {
    const c = warren(["chat", agentId, "--title", "notes"]);
    c.write("What do the notes say?");
    await c.saw("The notes say: tea at five.\n");
    // the second message goes only now: the first turn is over, its answer printed
    c.write("");
    c.write("And at what time?");
    c.end();
    const out = await c.done;
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, "The notes say: tea at five.\nFive o'clock, as the notes said.\n");
    conversationId = /conversation (cnv_\w+)/.exec(out.stderr)?.[1] ?? "";
    assert.ok(conversationId, out.stderr);
    assert.match(out.stderr, /· read_file ALLOW \{"path":"notes\.txt"\}/);
  });

  test("conversations list, get and messages; chat --conversation continues it; close ends it", async () => {
    const cli = (args: string[], stdin = "") => {
      const c = warren(args);
      if (stdin) c.write(stdin);
      c.end();
      return c.done;
    };
    const list = await cli(["conversations", "list", agentId]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`^${conversationId} +open +notes +`, "m"));
    const got = await cli(["--json", "conversations", "get", conversationId]);
    assert.equal(JSON.parse(got.stdout).title, "notes");

    const more = await cli(["chat", agentId, "--conversation", conversationId], "Thanks!");
    assert.equal(more.code, 0, more.stderr);
    assert.equal(more.stdout, "Goodbye.\n");

    const thread = await cli(["conversations", "messages", conversationId]);
    assert.equal(thread.code, 0, thread.stderr);
    const said = [...thread.stdout.matchAll(/^ {2}(.*)$/gm)].map((m) => m[1]);
    assert.deepEqual(said, [
      "What do the notes say?",
      "The notes say: tea at five.",
      "And at what time?",
      "Five o'clock, as the notes said.",
      "Thanks!",
      "Goodbye.",
    ]);

    // for scripts: each event of the session's turns as a JSON line
    const json = await cli(["--json", "chat", agentId, "--conversation", conversationId], "One more.");
    assert.equal(json.code, 0, json.stderr);
    assert.equal(json.stderr, "");
    const events = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string; type: string; run_id: string; data: any });
    assert.equal(new Set(events.map((e) => e.run_id)).size, 1);
    assert.equal(events.at(-1)?.type, "exit");
    assert.equal(events.at(-1)?.data.status, "succeeded");
    assert.ok(
      events.some((e) => e.type === "message" && e.data.role === "agent" && e.data.text === "Noted."),
    );

    const closed = await cli(["conversations", "close", conversationId]);
    assert.equal(closed.code, 0, closed.stderr);
    assert.match(closed.stdout, /^status +closed$/m);
    const refused = await cli(["chat", agentId, "--conversation", conversationId], "Still there?");
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^error: conversation\.closed: /m);
  });

  test("an unknown persona is refused before a conversation starts", async () => {
    const c = warren(["chat", agentId, "--persona", "nobody"]);
    c.end();
    const out = await c.done;
    assert.equal(out.code, 1);
    assert.match(
      out.stderr,
      /^error: persona\.unknown: agt_\w+ has no persona named "nobody" \(it has none\)$/m,
    );
    const list = (await t.call("GET", `/api/agents/${agentId}/conversations`)).body.items as unknown[];
    assert.equal(list.length, 1);
  });

  test("--persona by name starts the conversation as that persona; no line, no message", async () => {
    const p = await t.call("POST", `/api/agents/${agentId}/personas`, {
      name: "reader",
      tools: ["read_file"],
    });
    assert.equal(p.status, 201, JSON.stringify(p.body));
    const c = warren(["chat", agentId, "--persona", "reader"]);
    c.end();
    const out = await c.done;
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, "");
    const id = /conversation (cnv_\w+)/.exec(out.stderr)?.[1] ?? "";
    const made = await t.call("GET", `/api/conversations/${id}`);
    assert.equal(made.body.persona_id, p.body.id);
    assert.deepEqual((await t.call("GET", `/api/conversations/${id}/messages`)).body.items, []);
  });

  test("the answer is printed as the model writes it, before it has finished", async () => {
    const a = await makeAgent(t.call, where, {
      name: "teller",
      model: { provider: "openai-compatible", name: "held", base_url: held.baseUrl },
    });
    const c = warren(["chat", a.id]);
    c.write("Where is tea?");
    await c.saw("Tea is served ");
    held.release();
    await c.saw("Tea is served in the garden.\n");
    c.end();
    const out = await c.done;
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, "Tea is served in the garden.\n");
  });

  test("a tool call between two texts: each step's text printed once, and the whole final answer", async () => {
    fake.script([
      {
        text: "Let me look at the notes.",
        tool_calls: [{ name: "read_file", input: { path: "notes.txt" } }],
      },
      { text: "The notes say that tea is served at five in the garden, by the old oak tree." },
    ]);
    const a = await makeAgent(t.call, where, {
      name: "looker",
      model: { provider: "openai-compatible", name: "looker", base_url: fake.baseUrl },
      tools: builtins("read_file"),
      tool_policy: ALLOW_READS,
    });
    await putHomeFile(t, a.id, "notes.txt", "tea at five");
    const c = warren(["chat", a.id]);
    c.write("What do the notes say?");
    c.end();
    const out = await c.done;
    assert.equal(out.code, 0, out.stderr);
    assert.equal(
      out.stdout,
      "Let me look at the notes.\nThe notes say that tea is served at five in the garden, by the old oak tree.\n",
    );
    assert.match(out.stderr, /· read_file ALLOW \{"path":"notes\.txt"\}/);

    // the same as an agent run: `runs logs` prints each step's text once and the answer once
    fake.script([
      { text: "Let me look again.", tool_calls: [{ name: "read_file", input: { path: "notes.txt" } }] },
      { text: "Tea at five, still." },
    ]);
    const r = await t.call("POST", `/api/agents/${a.id}/runs`, { kind: "agent", input: "Again?" });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const logs = warren(["runs", "logs", "-f", r.body.id]);
    logs.end();
    const followed = await logs.done;
    assert.equal(followed.code, 0, followed.stderr);
    assert.equal(followed.stdout, "Let me look again.\nTea at five, still.\n");
    const again = warren(["runs", "logs", r.body.id]);
    again.end();
    assert.equal((await again.done).stdout, followed.stdout);
  });
});
