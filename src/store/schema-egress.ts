// The egress proxy's interception authorities (src/egress/authority.ts), a part of the schema
// re-exported by schema.ts: one certificate authority per machine, whose certificate the
// machine's box trusts and whose key (sealed under the master key, like a secret's value)
// only the server holds. The proxy signs with it the certificates of the hosts that secrets
// of use egress are bound to, and of no other.
import { pgTable, text } from "drizzle-orm/pg-core";
import { created } from "./columns.js";
import { machines } from "./schema.js";

export const egressAuthorities = pgTable("egress_authorities", {
  machineId: text("machine_id")
    .primaryKey()
    .references(() => machines.id, { onDelete: "cascade" }),
  /** The authority's certificate (PEM). */
  cert: text("cert").notNull(),
  /** Its private key (PKCS#8 PEM), sealed under the master key. */
  sealedKey: text("sealed_key").notNull(),
  createdAt: created(),
});
