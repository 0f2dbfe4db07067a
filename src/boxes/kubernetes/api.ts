// The calls the kubernetes provider makes of the API server, through @kubernetes/client-node:
// Pods, claims and NetworkPolicies of one namespace (create, read, list by labels, delete,
// watch), the boot checks' reads (version, namespace, storage class, access reviews), and
// exec (reaching boxd, relay.ts). Every refusal becomes box.unavailable with the status.
import {
  ApiException,
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  NetworkingV1Api,
  StorageV1Api,
  VersionApi,
  Watch,
  type V1NetworkPolicy,
  type V1PersistentVolumeClaim,
  type V1Pod,
} from "@kubernetes/client-node";
import { WarrenError } from "../../errors.js";

/** The API server from a kubeconfig file (WARREN_K8S_KUBECONFIG), or the Pod's own in-cluster account. */
export function loadKubeConfig(file: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (!file) kc.loadFromCluster();
  else
    try {
      kc.loadFromFile(file);
    } catch (err) {
      throw new Error(`WARREN_K8S_KUBECONFIG ${file} cannot be read: ${(err as Error).message}`, {
        cause: err,
      });
    }
  return kc;
}

/** The status of a refused call (404, 409, ...), or 0 when the API server did not answer. */
export function statusOf(err: unknown): number {
  return err instanceof ApiException ? err.code : 0;
}

function refused(what: string, err: unknown): WarrenError {
  const code = statusOf(err);
  const reason =
    err instanceof ApiException
      ? `${code} ${(() => {
          try {
            return (JSON.parse(String(err.body)) as { message?: string }).message ?? "";
          } catch {
            return "";
          }
        })()}`.trim()
      : (err as Error).message;
  return new WarrenError("box.unavailable", `the Kubernetes API refused ${what}: ${reason}`, undefined, {
    cause: err,
  });
}

/** A call whose 404 (or other listed status) is an answer, not a failure: null then. */
async function orNull<T>(p: Promise<T>, codes: number[] = [404]): Promise<T | null> {
  try {
    return await p;
  } catch (err) {
    if (codes.includes(statusOf(err))) return null;
    throw err;
  }
}

export class KubeApi {
  readonly core: CoreV1Api;
  readonly net: NetworkingV1Api;
  readonly storage: StorageV1Api;
  readonly auth: AuthorizationV1Api;
  readonly version: VersionApi;

  constructor(
    readonly kc: KubeConfig,
    readonly namespace: string,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.net = kc.makeApiClient(NetworkingV1Api);
    this.storage = kc.makeApiClient(StorageV1Api);
    this.auth = kc.makeApiClient(AuthorizationV1Api);
    this.version = kc.makeApiClient(VersionApi);
  }

  /** The API server's address, for messages. */
  server(): string {
    return this.kc.getCurrentCluster()?.server ?? "(no cluster)";
  }

  async readPod(name: string): Promise<V1Pod | null> {
    try {
      return await orNull(this.core.readNamespacedPod({ name, namespace: this.namespace }));
    } catch (err) {
      throw refused(`reading Pod ${name}`, err);
    }
  }

  async createPod(body: V1Pod): Promise<V1Pod> {
    try {
      return await this.core.createNamespacedPod({ namespace: this.namespace, body });
    } catch (err) {
      throw refused(`creating Pod ${body.metadata?.name}`, err);
    }
  }

  /** Deletes the Pod at once (no grace: boxd ends the agents' processes with it); false when there was none. */
  async deletePod(name: string): Promise<boolean> {
    try {
      return (
        (await orNull(
          this.core.deleteNamespacedPod({ name, namespace: this.namespace, gracePeriodSeconds: 0 }),
        )) !== null
      );
    } catch (err) {
      throw refused(`deleting Pod ${name}`, err);
    }
  }

  async listPods(labelSelector: string): Promise<V1Pod[]> {
    try {
      return (await this.core.listNamespacedPod({ namespace: this.namespace, labelSelector })).items;
    } catch (err) {
      throw refused("listing Pods", err);
    }
  }

  /** A claim of the namespace, or null when there is none (the workspaces claim's boot check). */
  async readClaim(name: string): Promise<V1PersistentVolumeClaim | null> {
    return orNull(this.core.readNamespacedPersistentVolumeClaim({ name, namespace: this.namespace }));
  }

  /** Creates the NetworkPolicy unless one of its name exists. */
  async ensurePolicy(body: V1NetworkPolicy): Promise<void> {
    try {
      await orNull(this.net.createNamespacedNetworkPolicy({ namespace: this.namespace, body }), [409]);
    } catch (err) {
      throw refused(`creating NetworkPolicy ${body.metadata?.name}`, err);
    }
  }

  async deletePolicy(name: string): Promise<void> {
    try {
      await orNull(this.net.deleteNamespacedNetworkPolicy({ name, namespace: this.namespace }));
    } catch (err) {
      throw refused(`deleting NetworkPolicy ${name}`, err);
    }
  }

  /**
   * Watches one Pod (by name, from a resource version) until `until` says what it waited
   * for, the Pod is deleted (null), or the time is up.
   */
  async watchPod(
    name: string,
    resourceVersion: string | undefined,
    until: (pod: V1Pod) => boolean,
    timeoutMs: number,
  ): Promise<V1Pod | null> {
    let controller: AbortController | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<V1Pod | null>((resolve, reject) => {
        timer = setTimeout(
          () =>
            reject(new WarrenError("box.unavailable", `Pod ${name} was not ready within ${timeoutMs} ms`)),
          timeoutMs,
        );
        new Watch(this.kc)
          .watch(
            `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods`,
            {
              fieldSelector: `metadata.name=${name}`,
              ...(resourceVersion ? { resourceVersion } : {}),
              allowWatchBookmarks: false,
            },
            (phase: string, obj: V1Pod) => {
              if (phase === "DELETED") resolve(null);
              else if ((phase === "ADDED" || phase === "MODIFIED") && until(obj)) resolve(obj);
            },
            (err: unknown) => {
              if (err && !(err instanceof Error && err.name === "AbortError"))
                reject(refused(`watching Pod ${name}`, err));
              else reject(new WarrenError("box.unavailable", `the watch of Pod ${name} ended early`));
            },
          )
          .then(
            (c) => (controller = c),
            (err: unknown) => reject(refused(`watching Pod ${name}`, err)),
          );
      });
    } finally {
      clearTimeout(timer);
      controller?.abort();
    }
  }
}
