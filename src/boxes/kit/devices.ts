// The host's GPU devices a box with the `gpu` capability sees: NVIDIA's device files, AMD's
// kfd and the render nodes of /dev/dri. Found under a /dev given as a parameter, so that the
// list is checked against a made-up /dev on a host without a GPU.
import { readdirSync } from "node:fs";

function names(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** The GPU device files under `dev` (none: this host has no GPU). */
export function gpuDevices(dev = "/dev"): string[] {
  const found: string[] = [];
  for (const name of names(dev))
    if (/^nvidia(\d+|ctl|-uvm|-uvm-tools|-modeset)$/.test(name) || name === "kfd")
      found.push(`${dev}/${name}`);
  for (const name of names(`${dev}/dri`))
    if (/^(renderD|card)\d+$/.test(name)) found.push(`${dev}/dri/${name}`);
  return found;
}
