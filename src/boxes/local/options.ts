// The local provider's options, checked when it is made (provider.ts).
import { z } from "zod";
import type { LoggerLike } from "../kit/logger.js";

export const optionsSchema = z.object({
  stateRoot: z.string().min(1),
  runRoot: z.string().min(1).optional(),
  /** Machines' folders and agents' homes (default STATE_ROOT/workspaces). */
  workspacesRoot: z.string().min(1).optional(),
  /** The boxd binary (default dist/native/boxd). */
  boxdBinary: z.string().min(1).optional(),
  spawnHelper: z.string().min(1).optional(),
  /** The user namespace launcher (default dist/native/box-userns). */
  userns: z.string().min(1).optional(),
  /** The host uid and gid of box root (boxd); owns nothing else on the host. */
  boxRootId: z.number().int().min(65536).max(0x7ffffffe).optional(),
  bwrap: z.string().min(1).optional(),
  cgroupParent: z
    .string()
    .regex(
      /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/,
      "cgroupParent is a relative cgroup path like warren or warren/test",
    )
    .optional(),
  startTimeoutMs: z.number().int().positive().optional(),
  /** boxd stops its box after this many seconds without the server (0: never). */
  orphanAfterS: z.number().int().min(0).optional(),
});

export type LocalProviderOptions = z.input<typeof optionsSchema> & { logger?: LoggerLike };
