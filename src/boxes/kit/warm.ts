// Claiming a warm box: a box started ahead of need under an id of its own, given to a
// machine at its first start without a cold start (local and oci). Its binds follow their
// folders, so the machine's homes move into the warm box's folder, which then takes the
// machine's name; the box's state folder (boxd's socket folder bound inside) is renamed the
// same way. Its cgroups keep their names (the record lists them) and take the machine's
// limits; its users are read again from the homes; its record takes the machine's spec and
// labels.
import fs from "node:fs";
import path from "node:path";
import { WarrenError } from "../../errors.js";
import type { BoxSpec } from "../types.js";
import { applyPlan, cgroupPlan, type CgroupLayout } from "./cgroups.js";
import { readBoxRecord, writeBoxRecord, type BoxRecord } from "./record.js";
import { refreshBoxUsers } from "./users.js";

export interface WarmClaim {
  /** The warm box's and the machine's state folders (run/boxes/<id>). */
  warmBoxDir: string;
  boxDir: string;
  /** The warm box's and the machine's folders (its /home). */
  warmMachineDir: string;
  machineDir: string;
  layout: CgroupLayout;
  cgroupParent: string;
  spec: BoxSpec;
}

/** Moves the warm box to the machine; the record it now has. */
export async function claimWarm(c: WarmClaim): Promise<BoxRecord> {
  const rec = readBoxRecord(c.warmBoxDir);
  if (!rec || rec.state !== "running")
    throw new WarrenError("box.unavailable", "the warm box is not running");
  if (readBoxRecord(c.boxDir)?.state === "running")
    throw new WarrenError("box.unavailable", "the machine has a box already");
  // the machine's homes into the warm box's /home, which then becomes the machine's folder
  fs.mkdirSync(c.machineDir, { recursive: true });
  for (const name of fs.readdirSync(c.machineDir))
    fs.renameSync(path.join(c.machineDir, name), path.join(c.warmMachineDir, name));
  fs.rmdirSync(c.machineDir);
  fs.renameSync(c.warmMachineDir, c.machineDir);
  fs.rmSync(c.boxDir, { recursive: true, force: true });
  fs.renameSync(c.warmBoxDir, c.boxDir);
  // the machine's limits on the box's cgroups (named for the warm box)
  const warmId = rec.spec.id;
  applyPlan(cgroupPlan(c.spec.limits, c.layout, { parent: c.cgroupParent, boxId: warmId }));
  const claimed: BoxRecord = { ...rec, spec: c.spec };
  await writeBoxRecord(c.boxDir, claimed);
  refreshBoxUsers(c.boxDir);
  return claimed;
}
