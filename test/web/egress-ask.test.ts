// An egress approval in a real browser (Debian's chromium, driven by playwright-core) against
// a real `warren serve` (real boxes): a run's request to a host its policy's network.ask names
// is held; on the organisation's page its card shows the host, port and method, and "Allow and
// add to the policy" lets the held request through (the upstream on loopback sees it once) and
// adds the host:port to the agent's allow list as a new version by the person who decided.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";
import { newAgent, orgAndMachine } from "../support/org.js";

describe("egress approvals in the app", { skip: boxSkipReason() ?? false }, () => {
  let web: WebApp;
  let upstream: http.Server;
  let port = 0;
  let seen = 0;
  const api = (method: string, url: string, body?: object) => web.api(method, url, body);

  before(async () => {
    upstream = http.createServer((_req, res) => {
      seen++;
      res.end("hello from the held host\n");
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    port = (upstream.address() as AddressInfo).port;
    web = await startWebApp("egress-ask", { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${port}` });
  });
  after(async () => {
    await web?.stop();
    await new Promise<void>((r) => upstream?.close(() => r()));
  });

  test("Allow and add to the policy: the held request goes through, and the host joins the allow list", async () => {
    const { org, machine } = await orgAndMachine(api, "Held");
    const agent = await newAgent(api, { org, machine }, { name: "fetcher" });
    const entry = `127.0.0.1:${port}`;
    const set = await api("PATCH", `/api/agents/${agent.id}`, {
      sandbox_policy: { network: { allow: [], ask: [entry] } },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const versions = (await api("GET", `/api/agents/${agent.id}/versions`)).body.items.length as number;
    const r = await api("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      // through the proxy (a box's NO_PROXY leaves loopback out of it)
      command: `env -u NO_PROXY -u no_proxy curl -sS -w ' %{http_code}\\n' http://${entry}/hi`,
      timeout_s: 90,
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const held = await waitFor("the request to be held", async () => {
      const items = (await api("GET", `/api/runs/${r.body.id}/approvals`)).body.items;
      return items.find((a: { status: string }) => a.status === "waiting");
    });
    assert.equal(held.tool, "egress");
    assert.equal(seen, 0, "nothing reached the host while it was held");

    const page = await web.person(OWNER);
    await page.goto(`${web.base}/orgs/${org.id}`);
    const card = page.getByRole("article", { name: `approval ${held.id}` });
    await card.waitFor();
    assert.deepEqual(JSON.parse(await card.getByTestId("arguments").innerText()), {
      host: "127.0.0.1",
      method: "GET",
      port,
    });
    await web.shot(page, "egress-ask");
    await card.getByRole("button", { name: `Allow and add to fetcher's allow list` }).click();
    const done = await web.ended(r.body.id as string);
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    assert.equal(done.output, "hello from the held host\n 200\n");
    assert.equal(seen, 1);
    const decided = (await api("GET", `/api/runs/${r.body.id}/approvals`)).body.items[0];
    assert.equal(decided.status, "allowed");
    assert.equal(decided.decided_by, OWNER);
    const a = (await api("GET", `/api/agents/${agent.id}`)).body;
    assert.deepEqual(a.sandbox_policy.network.allow, [entry]);
    const after = (await api("GET", `/api/agents/${agent.id}/versions`)).body.items;
    assert.equal(after.length, versions + 1);
    const newest = after.reduce((x: any, y: any) => (y.version > x.version ? y : x));
    assert.equal(newest.created_by, OWNER);
  });
});
