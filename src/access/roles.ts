// Roles and what each may do. Viewers and auditors read; nobody outside an organisation
// learns that anything of it exists (404, never 403).
import type { Role } from "../contract/common.js";

export type { Role };

/**
 * read: see the record (resources, runs, receipts); inspect: also see workloads (home
 * files, run output and traces, agents' ports); write: create, change, run; manage: members
 * and the organisation itself. An auditor reads the record without workloads.
 */
export type Permission = "read" | "inspect" | "write" | "manage";

export function allows(role: Role, perm: Permission): boolean {
  switch (perm) {
    case "read":
      return true;
    case "inspect":
      return role !== "auditor";
    case "write":
      return role === "owner" || role === "admin" || role === "editor";
    case "manage":
      return role === "owner" || role === "admin";
  }
}
