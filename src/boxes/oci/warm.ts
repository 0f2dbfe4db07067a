// Claiming a warm oci box: a running container started ahead of need under an id of its
// own, given to a machine at its first start. Its folders are claimed as a local warm box's
// (../kit/warm.ts: the machine's homes moved into the warm box's folder, which then takes
// the machine's name; its state folder renamed; its agents' cgroups given the machine's
// limits; its users read again). No engine call stands in the claim's way:
// - the container keeps its name, which the box's record names (`container`): a rename is
//   an engine round trip, and an engine cannot change a container's labels anyway (the
//   box's labels are its record's; the provider lists boxes by record);
// - the container's own limits (its cgroup holds boxd alone: every agent command runs in
//   the agents' cgroups, which the claim gives the machine's limits before it returns) are
//   updated right after the claim, under the box's lock (provider.ts).
import { WarrenError } from "../../errors.js";
import type { BoxSpec } from "../types.js";
import { writeBoxRecord, type BoxRecord } from "../kit/record.js";
import { claimWarm, type WarmClaim } from "../kit/warm.js";
import type { Engine } from "./engine.js";

/** Engines that answered Docker's update with 404 (Podman's compatible API has none). */
const podmanUpdate = new WeakSet<Engine>();

/** The container's limits, through Docker's update or else Podman's own. */
export async function updateLimits(engine: Engine, name: string, limits: BoxSpec["limits"]): Promise<void> {
  const memory = limits.memoryMib * 1024 * 1024;
  if (!podmanUpdate.has(engine)) {
    const docker = await engine.request("POST", `/containers/${name}/update`, {
      Memory: memory,
      MemorySwap: memory,
      NanoCpus: Math.round(limits.cpus * 1e9),
      PidsLimit: limits.pids,
    });
    if (docker.status === 200) return;
    if (docker.status !== 404)
      throw new WarrenError("box.unavailable", `the engine refused the box's limits: ${docker.status}`);
    podmanUpdate.add(engine);
  }
  const period = 100_000;
  await engine.expect("POST", `/libpod/containers/${name}/update`, [200, 201, 204], {
    memory: { limit: memory, swap: memory },
    cpu: { quota: Math.round(limits.cpus * period), period },
    pids: { limit: limits.pids },
  });
}

/** Gives the warm box, whose container is `container`, to the machine of `c.spec`; its record now. */
export async function claimWarmContainer(container: string, c: WarmClaim): Promise<BoxRecord> {
  const rec: BoxRecord = { ...(await claimWarm(c)), container };
  await writeBoxRecord(c.boxDir, rec);
  return rec;
}
