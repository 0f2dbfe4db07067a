// The kubernetes provider: a box is a Pod in one namespace (WARREN_K8S_NAMESPACE) with boxd
// as its one process and a NetworkPolicy that lets only the server near it (manifests.ts),
// driven through the API server (api.ts). The machines' folders are on one ReadWriteMany
// claim that the server mounts at its workspaces root: the server writes homes, a run's
// private files and the box's users there (volume.ts), and each Pod mounts its sub-paths.
// boxd is reached through the API server's exec (relay.ts): the box's endpoint is a unix
// socket on this host whose connections become execs of box-bridge in the Pod. What
// differs from a local box (no pause, no per-command cgroups) is in docs/kubernetes.md.
// State: the Pods, by label; the spec a box was created with, in
// STATE_ROOT/run/k8s-boxes/<id>/box.json as the other providers keep it.
import fs from "node:fs";
import type { KubeConfig, V1Pod } from "@kubernetes/client-node";
import { WarrenError, notFound } from "../../errors.js";
import { BOX_ID, checkSpec, readBoxRecord, recordSpec, writeBoxRecord } from "../kit/record.js";
import { providerRoots } from "../kit/dirs.js";
import type {
  BoxHandle,
  BoxLabels,
  BoxProvider,
  BoxSpec,
  BoxState,
  BoxUsage,
  HostProbe,
  RunFilesDir,
} from "../types.js";
import { ProviderBase, type ProviderBaseOptions } from "../kit/base.js";
import { KubeApi } from "./api.js";
import { kubernetesProbes } from "./checks.js";
import {
  BOX_ID_LABEL,
  boxLabelsOf,
  IN_POD,
  labelSelector,
  networkPolicyManifest,
  podManifest,
  podName,
  policyName,
  SERVER_POD_LABELS,
  type PodSettings,
  type ServerPeer,
} from "./manifests.js";
import { Relay } from "./relay.js";
import { BoxVolume } from "./volume.js";

export interface KubernetesProviderOptions extends ProviderBaseOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  image: string;
  /** The storage class the boot checks look for (the claims' class). */
  storageClass: string;
  /** The claim of /data, the contracts and the harness CLIs (by sub-path). */
  sharedClaim: string;
  /** The ReadWriteMany claim of the machines' folders, mounted by the server at workspacesRoot. */
  workspacesClaim: string;
  /** The id box root's folders carry on that claim: 0 where the Pods' volumes are idmapped. */
  boxRootId?: number;
  server?: ServerPeer;
  seccomp?: PodSettings["seccomp"];
  orphanAfterS?: number;
  startTimeoutMs?: number;
}

/** A Pod's phase as a box's state. */
function podState(pod: V1Pod | null): BoxState | null {
  if (!pod) return null;
  if (pod.metadata?.deletionTimestamp) return "stopped";
  switch (pod.status?.phase) {
    case "Running":
      return "running";
    case "Pending":
      return "created";
    default:
      return "stopped";
  }
}

export class KubernetesProvider extends ProviderBase implements BoxProvider {
  readonly name = "kubernetes" as const;
  /** A Pod cannot be frozen through the API: idle boxes are stopped (docs/kubernetes.md). */
  readonly pauses = false;
  readonly api: KubeApi;
  private readonly volume: BoxVolume;
  private readonly relays = new Map<string, Relay>();

  constructor(private readonly o: KubernetesProviderOptions) {
    super(o, "k8s-boxes", "boxd.sock");
    this.volume = new BoxVolume(providerRoots(o).workspacesRoot, o.boxRootId ?? 0);
    this.api = new KubeApi(o.kubeConfig, o.namespace);
  }

  /** Closes the relays: boxes go on running, and the next server adopts them. */
  close(): void {
    for (const r of this.relays.values()) r.close();
    this.relays.clear();
  }

  private handle(id: string, labels: BoxLabels, state: BoxState, pod: V1Pod | null): BoxHandle {
    const started = pod?.status?.startTime;
    return {
      id,
      labels,
      state,
      endpoint: this.endpoint(id),
      pid: null,
      startedAt: state === "running" && started ? new Date(started) : null,
    };
  }

  /** The box's relay, listening once its Pod runs (again after a restart of the server: adoption). */
  private async relay(id: string): Promise<void> {
    if (this.relays.has(id)) return;
    fs.mkdirSync(this.boxDir(id), { recursive: true, mode: 0o700 });
    const relay = await Relay.listen(
      this.o.kubeConfig,
      { namespace: this.o.namespace, pod: podName(id) },
      this.endpoint(id).path,
      this.logger,
    );
    if (this.relays.has(id)) relay.close();
    else this.relays.set(id, relay);
  }

  private dropRelay(id: string): void {
    this.relays.get(id)?.close();
    this.relays.delete(id);
  }

  async create(spec: BoxSpec): Promise<BoxHandle> {
    checkSpec(spec);
    // the objects must be expressible before anything is recorded, and the machine's folder
    // the one the Pod mounts
    podManifest(spec, this.podSettings());
    this.volume.checkHome(spec);
    return this.locks.run(spec.id, async () => {
      await recordSpec(this.boxDir(spec.id), spec);
      const pod = await this.api.readPod(podName(spec.id));
      return this.handle(spec.id, spec.labels, podState(pod) ?? "created", pod);
    });
  }

  private podSettings(): PodSettings {
    return {
      namespace: this.o.namespace,
      image: this.o.image,
      sharedClaim: this.o.sharedClaim,
      workspacesClaim: this.o.workspacesClaim,
      seccomp: this.o.seccomp ?? { kind: "runtime-default" },
      orphanAfterS: this.o.orphanAfterS ?? 300,
    };
  }

  async start(id: string): Promise<BoxHandle> {
    return this.locks.run(id, async () => {
      const rec = readBoxRecord(this.boxDir(id));
      if (!rec) throw notFound(`box ${id}`);
      const { spec } = rec;
      const timeoutMs = this.o.startTimeoutMs ?? 120_000;
      let pod = await this.api.readPod(podName(id));
      if (pod && podState(pod) === "stopped") {
        await this.end(id);
        pod = null;
      }
      try {
        if (!pod) {
          await this.volume.prepare(spec);
          await this.api.ensurePolicy(
            networkPolicyManifest(
              spec,
              this.o.namespace,
              this.o.server ?? { kind: "pods", labels: { ...SERVER_POD_LABELS } },
            ),
          );
          pod = await this.api.createPod(podManifest(spec, this.podSettings()));
        }
        const running =
          podState(pod) === "running"
            ? pod
            : await this.api.watchPod(
                podName(id),
                pod.metadata?.resourceVersion,
                (p) => p.status?.phase !== "Pending",
                timeoutMs,
              );
        if (!running) throw new Error("the Pod was deleted while it started");
        if (podState(running) !== "running")
          throw new Error(`the Pod is ${running.status?.phase}: ${running.status?.message ?? "no message"}`);
        await this.relay(id);
        await this.waitForBoxd(id, timeoutMs);
        const startedAt = running.status?.startTime ? new Date(running.status.startTime).toISOString() : null;
        await writeBoxRecord(this.boxDir(id), { ...rec, state: "running", startedAt });
        this.logger.info(`box ${id} started in Pod ${podName(id)}`);
        return this.handle(id, spec.labels, "running", running);
      } catch (err) {
        await this.end(id).catch((cleanup: unknown) =>
          this.logger.warn(`box ${id}: its Pod was not deleted after a failed start: ${String(cleanup)}`),
        );
        await writeBoxRecord(this.boxDir(id), { ...rec, state: "stopped", startedAt: null });
        this.logger.error(`box ${id} failed to start: ${(err as Error).message}`);
        throw new WarrenError(
          "box.unavailable",
          `box ${id} did not start: ${(err as Error).message}`,
          undefined,
          {
            cause: err,
          },
        );
      }
    });
  }

  private async waitForBoxd(id: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const answered = await this.answers(id, 2000);
      if (answered) return;
      if (Date.now() > deadline) throw new Error(`boxd did not answer within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Deletes the Pod and waits until it is gone; the machine's folder stays. */
  private async end(id: string): Promise<void> {
    this.dropRelay(id);
    const name = podName(id);
    if (!(await this.api.deletePod(name))) return;
    const pod = await this.api.readPod(name);
    if (pod)
      await this.api.watchPod(
        name,
        pod.metadata?.resourceVersion,
        () => false,
        this.o.startTimeoutMs ?? 120_000,
      );
  }

  async stop(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      await this.end(id);
      const rec = readBoxRecord(this.boxDir(id));
      if (rec) await writeBoxRecord(this.boxDir(id), { ...rec, state: "stopped", startedAt: null });
    });
  }

  /** A Pod cannot be frozen through the API: the idle timer's pause finds this and stops the box. */
  pause(id: string): Promise<void> {
    return Promise.reject(
      new WarrenError(
        "box.unavailable",
        `box ${id}: the kubernetes provider cannot pause a box; stop it instead`,
      ),
    );
  }

  async resume(id: string): Promise<BoxHandle> {
    const h = await this.inspect(id);
    if (h?.state === "running") return h;
    throw new WarrenError(
      "box.unavailable",
      `box ${id} is not paused (the kubernetes provider never pauses)`,
    );
  }

  async inspect(id: string): Promise<BoxHandle | null> {
    const rec = readBoxRecord(this.boxDir(id));
    const pod = await this.api.readPod(podName(id));
    const labels = rec?.spec.labels ?? boxLabelsOf(pod?.metadata?.labels);
    if (!labels) return null;
    const state = podState(pod) ?? (rec?.state === "created" ? "created" : "stopped");
    if (state === "running") await this.relay(id);
    return this.handle(id, labels, state, pod);
  }

  async list(labels?: Partial<BoxLabels>): Promise<BoxHandle[]> {
    const pods = await this.api.listPods(labelSelector({ ...labels, "warren.provider": "kubernetes" }));
    const out: BoxHandle[] = [];
    for (const pod of pods) {
      const id = pod.metadata?.labels?.[BOX_ID_LABEL];
      const boxLabels = boxLabelsOf(pod.metadata?.labels);
      if (!id || !BOX_ID.test(id) || !boxLabels) continue;
      const state = podState(pod) ?? "stopped";
      if (state === "running") await this.relay(id);
      out.push(this.handle(id, boxLabels, state, pod));
    }
    return out;
  }

  /**
   * Deletes the Pod, its NetworkPolicy and what the provider wrote for it on the workspaces
   * claim (private files, users); the machine's folder is the server's (homes.removeMachine).
   */
  async remove(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      await this.end(id);
      await this.api.deletePolicy(policyName(id));
      await this.volume.remove(id);
      fs.rmSync(this.boxDir(id), { recursive: true, force: true });
    });
  }

  /**
   * Rewrites the box's passwd and group on the claim from the homes in the machine's folder,
   * in place: the Pod has them mounted by sub-path, and sees the change at once.
   */
  override async refreshUsers(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      const rec = readBoxRecord(this.boxDir(id));
      if (rec) await this.volume.writeUsers(rec.spec);
    });
  }

  /** The box's private folder on the claim (box root's, 0700), mounted in the Pod at IN_POD.privateDir. */
  /** No runtime folders in a pod yet: nothing the server writes reaches one. */
  override runtimeDir(): null {
    return null;
  }

  override runFilesDir(id: string): RunFilesDir {
    this.dirs.dir(id); // a malformed id is refused, as for every host path
    return { hostDir: this.volume.paths(id).private, boxDir: IN_POD.privateDir };
  }

  /** Usage needs the metrics API, which this provider does not read yet. */
  async usage(): Promise<BoxUsage | null> {
    return null;
  }

  /** No cgroup per command in a Pod: boxd ends a cancelled command's tree itself. */
  override async killCommand(): Promise<number> {
    return 0;
  }

  hostProbes(): Record<string, HostProbe> {
    return kubernetesProbes(this.api, {
      storageClass: this.o.storageClass,
      workspacesClaim: this.o.workspacesClaim,
    });
  }
}
