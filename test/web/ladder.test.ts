// The app follows the seat, in a real browser (Debian's chromium) against a real `warren
// serve`: each role signs in and finds exactly the controls its row of docs/api.md's role
// table allows (create a machine: agent.create; add a member: member.set; upload a file:
// file.write; start a conversation: conversation.start; type in the terminal: exec).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";

let app: WebApp;
const api = (method: string, url: string, body?: object) => app.api(method, url, body);

before(async () => {
  app = await startWebApp("ladder");
});
after(async () => {
  await app?.stop();
});

type Seat = { email: string; role: string; areas?: string[] };
const SEATS: Seat[] = [
  { email: OWNER, role: "owner" },
  { email: "admin@example.com", role: "admin" },
  { email: "editor@example.com", role: "editor" },
  { email: "fenced@example.com", role: "editor", areas: ["proj"] },
  { email: "writer@example.com", role: "writer", areas: ["proj"] },
  { email: "viewer@example.com", role: "viewer" },
  { email: "auditor@example.com", role: "auditor" },
];

/** What each seat may do, as the role table says (`✓` rows of its column). */
function allowed(s: Seat) {
  const authors = s.role === "owner" || s.role === "admin" || (s.role === "editor" && !s.areas);
  return {
    machine: authors,
    member: s.role === "owner" || s.role === "admin",
    upload: ["owner", "admin", "editor", "writer"].includes(s.role),
    converse: !["viewer", "auditor"].includes(s.role),
    files: s.role !== "auditor",
  };
}

describe("every seat finds the controls its role allows", { concurrency: false }, () => {
  let org = "";
  let agent = "";

  test("set-up: an organisation with an agent and a member of every seat", async () => {
    org = (await api("POST", "/api/orgs", { name: "Ladder" })).body.id;
    const machine = await api("POST", "/api/machines", { org_id: org, name: "m" });
    const a = await api("POST", "/api/agents", { org_id: org, machine_id: machine.body.id, name: "a" });
    assert.equal(a.status, 201, JSON.stringify(a.body));
    agent = a.body.id;
    assert.equal((await api("PUT", `/api/orgs/${org}/areas/proj`, { folders: ["proj"] })).status, 200);
    for (const s of SEATS.slice(1)) {
      const r = await api("PUT", `/api/orgs/${org}/members`, s);
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
  });

  for (const seat of SEATS) {
    const label = `${seat.role}${seat.areas ? " with areas" : ""}`;
    test(`${label}: exactly the controls of its row`, async () => {
      const want = allowed(seat);
      const page = await app.person(seat.email);
      try {
        // each page counted once the seat's role is read (the organisations list) and drawn
        const open = async (url: string) => {
          const roles = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/orgs" && r.ok());
          await page.goto(url);
          await roles;
          await page.waitForLoadState("networkidle");
        };
        await open(`${app.base}/orgs/${org}`);
        await page.getByRole("heading", { name: "Machines" }).waitFor();
        const count = (sel: string) => page.locator(sel).count();
        assert.equal((await count('input[name="machine_name"]')) > 0, want.machine, "create a machine");
        assert.equal((await count('input[name="member_email"]')) > 0, want.member, "add a member");

        await open(`${app.base}/agents/${agent}/conversations`);
        assert.equal(
          (await page.getByRole("button", { name: "Start conversation" }).count()) > 0,
          want.converse,
          "start a conversation",
        );

        await open(`${app.base}/agents/${agent}/files`);
        if (want.files) {
          await page.getByTestId("files").or(page.getByText("This folder is empty")).first().waitFor();
          assert.equal(
            (await page.getByText("Upload a file here").count()) > 0,
            want.upload,
            "upload a file",
          );
        } else {
          assert.equal(await page.getByText("Upload a file here").count(), 0, "upload a file");
        }
      } finally {
        await page.close();
      }
    });
  }
});
