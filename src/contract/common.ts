// Shapes every resource's contract shares. This folder imports nothing but zod: the server
// validates and serialises with it, the SDK takes its types from it, the OpenAPI document
// is generated from it.
import { z } from "zod";
import { ROLES } from "./lists.js";

export const Role = z.enum(ROLES).meta({ id: "Role" });
export type Role = z.infer<typeof Role>;

/** An id of one kind: `agt_` and 16 lowercase letters or digits. */
export const idOf = (prefix: string) =>
  z.string().regex(new RegExp(`^${prefix}_[0-9a-z]{16}$`), `must be a ${prefix}_ id`);

/** A display name: 1-100 characters, trimmed, no control characters. */
export const name = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(100, "must be at most 100 characters")
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), "must not hold control characters");

export const idParams = (prefix: string) => z.object({ id: idOf(prefix) });

export const mibField = (max: number) =>
  z
    .number()
    .int("must be a whole number of MiB")
    .min(1, "must be at least 1")
    .max(max, `must be at most ${max}`);

/** The largest disk cap any home or machine may be given (16 TiB). */
export const MAX_MIB = 16 * 1024 * 1024;

export const orgIdQuery = z.object({ org_id: idOf("org").optional() }).strict();

/** Every list answer: `{items: [...]}`, named `<id>` in the document. */
export const items = <T extends z.ZodType>(item: T, id: string) =>
  z.object({ items: z.array(item) }).meta({ id });

/** Text without NUL, which no argv, path or environment can hold. */
export const noNul = (max: number) =>
  z
    .string()
    .max(max)
    .refine((a) => !a.includes("\0"), "must not hold NUL");

export const ErrorEnvelope = z
  .object({ error: z.object({ code: z.string(), message: z.string() }) })
  .meta({ id: "Error" });
