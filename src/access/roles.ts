// Roles and what each may do. Viewers and auditors read; nobody outside an organisation
// learns that anything of it exists (404, never 403).
import type { Role } from "../contract/common.js";

export type { Role };

/**
 * read: see the record (resources, runs, receipts); inspect: also see workloads (home
 * files, run output and traces, agents' ports); write: create, change, run agents (an
 * editor holding areas is refused what an area cannot fence: Access.require); edit: change
 * files of a home (inside one's areas, where one holds any); manage: members and the
 * organisation itself; converse: talk with an agent in a conversation. A writer changes
 * files in its areas and talks; an auditor reads the record without workloads; a guest only
 * talks, through the personas homed in its areas, and sees nothing else. The whole ladder,
 * action by action: the role table of docs/api.md (test/access/ladder.test.ts walks it).
 */
export type Permission = "read" | "inspect" | "write" | "edit" | "manage" | "converse";

export function allows(role: Role, perm: Permission): boolean {
  switch (perm) {
    case "read":
      return role !== "guest";
    case "inspect":
      return role !== "auditor" && role !== "guest";
    case "write":
      return role === "owner" || role === "admin" || role === "editor";
    case "edit":
      return role === "owner" || role === "admin" || role === "editor" || role === "writer";
    case "manage":
      return role === "owner" || role === "admin";
    case "converse":
      return role !== "viewer" && role !== "auditor";
  }
}
