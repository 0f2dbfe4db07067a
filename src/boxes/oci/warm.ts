// Claiming a warm oci box: a running container started ahead of need under an id of its
// own, given to a machine at its first start. Its folders are claimed as a local warm box's
// (../local/warm.ts: the machine's homes moved into the warm box's folder, which then takes
// the machine's name; its state folder renamed; its agents' cgroups given the machine's
// limits; its users read again), and the engine renames the container to the machine's name
// and gives it the machine's limits. An engine cannot change a container's labels: the box's
// labels are its record's (the provider lists by record, not by the container's labels).
import { WarrenError } from "../../errors.js";
import type { BoxSpec } from "../types.js";
import type { BoxRecord } from "../local/box-record.js";
import { claimWarm, type WarmClaim } from "../local/warm.js";
import { containerName } from "./container.js";
import type { Engine } from "./engine.js";

/** Engines that answered Docker's update with 404 (Podman's compatible API has none). */
const podmanUpdate = new WeakSet<Engine>();

/** The container's limits, through Docker's update or else Podman's own. */
async function updateLimits(engine: Engine, name: string, limits: BoxSpec["limits"]): Promise<void> {
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

/**
 * Gives the warm box `warmId` (its container `containerId`, known by the engine's id while
 * its name changes) to the machine of `c.spec`; the record it now has. The rename, the
 * limits and the folders go at once: none needs another. (A container already of the
 * machine's name fails the rename, and then the claim.)
 */
export async function claimWarmContainer(
  engine: Engine,
  containerId: string,
  warmId: string,
  c: WarmClaim,
): Promise<BoxRecord> {
  const renamed = engine.expect(
    "POST",
    `/containers/${containerId}/rename?name=${containerName(c.spec.id)}`,
    [200, 204],
  );
  const claimed = Promise.all([updateLimits(engine, containerId, c.spec.limits), claimWarm(c)]);
  const [r, cl] = await Promise.allSettled([renamed, claimed]);
  if (r.status === "fulfilled" && cl.status === "fulfilled") return cl.value[1];
  // the container keeps its own name again, so that the pool removes it
  if (r.status === "fulfilled")
    await engine
      .request("POST", `/containers/${containerId}/rename?name=${containerName(warmId)}`)
      .catch(() => undefined);
  throw r.status === "rejected" ? r.reason : (cl as PromiseRejectedResult).reason;
}
