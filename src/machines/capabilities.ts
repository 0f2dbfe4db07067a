// What a machine may turn on where its provider and host can: the host's GPU devices in the
// box (`gpu`), a container engine inside it (`nested_engine`), an image of its own (`image`).
// What cannot be is refused when the machine is saved (400 machine.capability_unavailable).
import { WarrenError } from "../errors.js";
import { gpuDevices } from "../runtime/index.js";

export interface MachineHost {
  /** The box provider's name (local, oci, kubernetes). */
  provider: string;
  /** The host's GPU device files (none: no GPU). */
  gpuDevices(): string[];
}

export const defaultHost = (provider: string): MachineHost => ({
  provider,
  gpuDevices: () => gpuDevices(),
});

const refuse = (message: string) => new WarrenError("machine.capability_unavailable", message);

/** Throws machine.capability_unavailable for what the machine asks that this host cannot give. */
export function checkCapabilities(
  host: MachineHost,
  want: { image?: string | null | undefined; gpu?: boolean | undefined; nested_engine?: boolean | undefined },
): void {
  if (want.gpu === true) {
    if (host.provider === "kubernetes")
      throw refuse(
        "gpu: kubernetes boxes get no GPU from warren (the cluster's device plugins are not asked)",
      );
    if (host.gpuDevices().length === 0)
      throw refuse("gpu: this host has no GPU device (/dev/nvidia*, /dev/kfd, /dev/dri/renderD*)");
  }
  if (want.nested_engine === true)
    throw refuse(
      "nested_engine: every box runs its agents' commands under the strict profile (no capability, a seccomp program that refuses mounts and new namespaces), where no container engine can run",
    );
  if (want.image && host.provider === "local")
    throw refuse(
      "image: local boxes run the host's system folders; a machine's own image needs the oci or kubernetes provider",
    );
}
