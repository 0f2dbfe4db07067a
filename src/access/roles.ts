// Roles and what each may do. Viewers and auditors read; nobody outside an organisation
// learns that anything of it exists (404, never 403).
export const roles = ["owner", "admin", "editor", "viewer", "auditor"] as const;
export type Role = (typeof roles)[number];

/** read: see; write: create, change, run; manage: members and the organisation itself. */
export type Permission = "read" | "write" | "manage";

export function allows(role: Role, perm: Permission): boolean {
  switch (perm) {
    case "read":
      return true;
    case "write":
      return role === "owner" || role === "admin" || role === "editor";
    case "manage":
      return role === "owner" || role === "admin";
  }
}
