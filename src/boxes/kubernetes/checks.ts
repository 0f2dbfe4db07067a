// The boot checks of WARREN_PROVIDER=kubernetes: the API server answers, the namespace and
// the storage class exist, the workspaces claim exists and is ReadWriteMany, and RBAC lets
// warren do what it does (one SelfSubjectAccessReview per verb and resource). Each refuses
// with one line naming the fix (src/boot).
import type { HostProbe } from "../types.js";
import { statusOf, type KubeApi } from "./api.js";

/** What warren does in its namespace: deploy/kubernetes/rbac.yaml grants exactly this. */
export const RBAC_NEEDS: readonly {
  group: string;
  resource: string;
  subresource?: string;
  verbs: string[];
}[] = [
  { group: "", resource: "pods", verbs: ["create", "get", "list", "watch", "delete"] },
  { group: "", resource: "pods", subresource: "exec", verbs: ["create", "get"] },
  { group: "", resource: "persistentvolumeclaims", verbs: ["get"] },
  { group: "networking.k8s.io", resource: "networkpolicies", verbs: ["create", "delete"] },
];

const why = (err: unknown): string => {
  const code = statusOf(err);
  return code ? `status ${code}` : ((err as Error).message ?? String(err));
};

export function kubernetesProbes(
  api: KubeApi,
  o: { storageClass: string; workspacesClaim: string },
): Record<string, HostProbe> {
  const ns = api.namespace;
  return {
    k8s_api: async () => {
      try {
        const v = await api.version.getCode();
        return { ok: true, detail: `the API server at ${api.server()} answers (${v.gitVersion})`, fix: "" };
      } catch (err) {
        return {
          ok: false,
          detail: `the API server at ${api.server()} does not answer (${why(err)})`,
          fix: "point WARREN_K8S_KUBECONFIG at a kubeconfig of a reachable cluster (or run the server in the cluster)",
        };
      }
    },
    k8s_namespace: async () => {
      try {
        await api.core.readNamespace({ name: ns });
        return { ok: true, detail: `the namespace ${ns} exists`, fix: "" };
      } catch (err) {
        return {
          ok: false,
          detail: `the namespace ${ns} ${statusOf(err) === 404 ? "does not exist" : `cannot be read (${why(err)})`}`,
          fix: `create it (kubectl create namespace ${ns}) or set WARREN_K8S_NAMESPACE`,
        };
      }
    },
    k8s_storage_class: async () => {
      try {
        await api.storage.readStorageClass({ name: o.storageClass });
        return { ok: true, detail: `the storage class ${o.storageClass} exists`, fix: "" };
      } catch (err) {
        return {
          ok: false,
          detail: `the storage class ${o.storageClass} ${statusOf(err) === 404 ? "does not exist" : `cannot be read (${why(err)})`}`,
          fix: "set WARREN_K8S_STORAGE_CLASS to one of `kubectl get storageclass`",
        };
      }
    },
    k8s_workspaces_claim: async () => {
      const fix = `create a ReadWriteMany claim ${o.workspacesClaim} in ${ns}, mounted by the server at STATE_ROOT/workspaces (deploy/kubernetes/rbac.yaml has one), or set WARREN_K8S_WORKSPACES_CLAIM`;
      try {
        const claim = await api.readClaim(o.workspacesClaim);
        if (!claim)
          return { ok: false, detail: `the claim ${o.workspacesClaim} does not exist in ${ns}`, fix };
        const modes = claim.spec?.accessModes ?? [];
        return modes.includes("ReadWriteMany")
          ? { ok: true, detail: `the claim ${o.workspacesClaim} exists and is ReadWriteMany`, fix: "" }
          : {
              ok: false,
              detail: `the claim ${o.workspacesClaim} is ${modes.join(", ") || "of no access mode"}, not ReadWriteMany: the server and every box mount it`,
              fix,
            };
      } catch (err) {
        return { ok: false, detail: `the claim ${o.workspacesClaim} cannot be read (${why(err)})`, fix };
      }
    },
    k8s_rbac: async () => {
      const denied: string[] = [];
      try {
        for (const need of RBAC_NEEDS)
          for (const verb of need.verbs) {
            const r = await api.auth.createSelfSubjectAccessReview({
              body: {
                apiVersion: "authorization.k8s.io/v1",
                kind: "SelfSubjectAccessReview",
                spec: {
                  resourceAttributes: {
                    namespace: ns,
                    verb,
                    group: need.group,
                    resource: need.resource,
                    ...(need.subresource ? { subresource: need.subresource } : {}),
                  },
                },
              },
            });
            if (!r.status?.allowed)
              denied.push(`${verb} ${need.resource}${need.subresource ? `/${need.subresource}` : ""}`);
          }
      } catch (err) {
        return {
          ok: false,
          detail: `access reviews were refused (${why(err)})`,
          fix: "let warren's account create selfsubjectaccessreviews (every account may by default)",
        };
      }
      return denied.length === 0
        ? { ok: true, detail: `warren may do what it does in ${ns}`, fix: "" }
        : {
            ok: false,
            detail: `RBAC denies ${denied.join(", ")} in ${ns}`,
            fix: "apply deploy/kubernetes/rbac.yaml (a Role and a RoleBinding for warren's account)",
          };
    },
  };
}
