// Request shapes shared by routes.
import { z } from "zod";
import { roles } from "../access/roles.js";

export const idOf = (prefix: string) =>
  z.string().regex(new RegExp(`^${prefix}_[0-9a-z]{16}$`), `must be a ${prefix}_ id`);

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

export const role = z.enum(roles);

export const orgIdQuery = z.object({ org_id: idOf("org").optional() }).strict();

export const items = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item) });
