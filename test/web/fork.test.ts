// Forking from a message in the operator app, in a real browser (Debian's chromium, driven by
// playwright-core) against a real `warren serve` (the built CLI, real boxes) and an assistant
// on the fake OpenAI-compatible model on loopback: a branch conversation of two turns whose
// worktree holds an uncommitted change; the Fork button of its third message opens the fork,
// which shows the first three messages only, and whose branch holds the change.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";
import { makeAgent, orgAndMachine } from "../support/org.js";

let fake: FakeModelServer | undefined;
let app: WebApp;

before(async () => {
  fake = await startFakeOpenAI([{ text: "First answer." }, { text: "Second answer." }]);
  app = await startWebApp("fork", { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake) });
});

after(async () => {
  // every box, then the server (WebApp.stop)
  await app?.stop();
  await fake?.close();
});

describe("forking in the app", () => {
  test("the Fork button of the third message opens a fork with three messages and the source's uncommitted change", async () => {
    const api = (method: string, url: string, body?: object) => app.api(method, url, body);
    const { org, machine } = await orgAndMachine(api, "Forks");
    const agent = await makeAgent(
      api,
      { org, machine },
      { name: "coder", model: { provider: "openai-compatible", name: "fork-web", base_url: fake!.baseUrl } },
    );
    const sh = async (command: string) => {
      const r = await api("POST", `/api/agents/${agent.id}/exec`, { command });
      assert.equal(r.body.exit_code, 0, `${command}: ${JSON.stringify(r.body)}`);
      return r.body.stdout as string;
    };
    await sh(
      "mkdir -p ~/app && cd ~/app && git init -q -b main && echo init > README.md && git add -A && git -c user.name=o -c user.email=o@x commit -qm init",
    );
    const c = await api("POST", `/api/agents/${agent.id}/conversations`, {
      title: "Source",
      repo: "app",
    });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    for (const text of ["first question", "second question"]) {
      const m = await api("POST", `/api/conversations/${c.body.id}/messages`, { text });
      assert.equal(m.status, 202, JSON.stringify(m.body));
      for (;;) {
        const run = (await api("GET", `/api/runs/${m.body.run_id}`)).body;
        if (!["queued", "running"].includes(run.status)) {
          assert.equal(run.status, "succeeded", JSON.stringify(run));
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await sh(`echo uncommitted > ~/.warren/worktrees/${c.body.id}/draft.txt`);

    const page = await app.person(OWNER);
    await page.goto(`${app.base}/agents/${agent.id}/conversations/${c.body.id}`);
    await page.getByTestId("agent-message").getByText("Second answer.").waitFor();
    const forks = page.getByTestId("fork");
    assert.equal(await forks.count(), 4);
    // the person's second message: the thread's third
    await forks.nth(2).click();
    await page.waitForURL(
      (u) => /\/conversations\/cnv_[0-9a-z]{16}$/.test(u.pathname) && !u.pathname.endsWith(c.body.id),
    );
    const forkId = new URL(page.url()).pathname.split("/").at(-1)!;
    // the fork's thread, not the source's still on screen while the new one loads: one answer
    await page.waitForFunction(
      `document.querySelectorAll('[data-testid="agent-message"]').length === 1 &&
        document.querySelectorAll('[data-testid="user-message"]').length === 2`,
    );
    assert.deepEqual(await page.getByTestId("user-message").allTextContents(), [
      "first question",
      "second question",
    ]);
    assert.equal(await page.getByTestId("agent-message").count(), 1);
    await app.shot(page, "fork");
    const fork = (await api("GET", `/api/conversations/${forkId}`)).body;
    assert.equal(fork.branch, `warren/${forkId}`);
    assert.equal(await sh(`git -C ~/app show warren/${forkId}:draft.txt`), "uncommitted\n");
    // the source is as it was
    assert.equal((await api("GET", `/api/conversations/${c.body.id}/messages`)).body.items.length, 4);
  });
});
