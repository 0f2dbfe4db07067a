// Ending a local box: its outer process (bwrap's) killed while its cgroup tree stands
// frozen. (A warm box is claimed by ../kit/warm.ts.)
import { destroyBoxCgroups } from "../kit/cgroups.js";
import type { BoxRecord } from "../kit/record.js";
import { isSameProcess } from "./proc.js";

/**
 * Ends a box: its outer process is killed while its cgroup tree (`dirs`) stands frozen, so
 * it all ends together, and the cgroups are removed. (A warm box claimed keeps its cgroups'
 * names: the record lists them.)
 */
export async function killBoxTree(rec: BoxRecord, dirs: string[]): Promise<void> {
  const outer =
    rec.pid !== null && rec.pidStart !== null && isSameProcess(rec.pid, rec.pidStart) ? rec.pid : null;
  await destroyBoxCgroups(dirs, undefined, () => {
    try {
      if (outer !== null) process.kill(outer, "SIGKILL");
    } catch {
      // gone
    }
  });
}
