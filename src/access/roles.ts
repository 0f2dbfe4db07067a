// Roles and what each may do. Viewers and auditors read; nobody outside an organisation
// learns that anything of it exists (404, never 403).
import type { Role } from "../contract/common.js";

export type { Role };

/**
 * read: see the record (resources, runs, receipts); inspect: also see workloads (home
 * files, run output and traces, agents' ports); write: create, change, run; manage: members
 * and the organisation itself; edit: write files of a home inside one's areas (write, but
 * granted to a member who holds areas, which `write` is not: Access.require); converse: talk with an agent in a conversation. An auditor
 * reads the record without workloads; a guest only talks, through the personas homed in its
 * areas, and sees nothing else.
 */
export type Permission = "read" | "inspect" | "write" | "edit" | "manage" | "converse";

export function allows(role: Role, perm: Permission): boolean {
  switch (perm) {
    case "read":
      return role !== "guest";
    case "inspect":
      return role !== "auditor" && role !== "guest";
    case "write":
    case "edit":
      return role === "owner" || role === "admin" || role === "editor";
    case "manage":
      return role === "owner" || role === "admin";
    case "converse":
      return role === "owner" || role === "admin" || role === "editor" || role === "guest";
  }
}
