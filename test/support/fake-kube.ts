// A Kubernetes API server for tests, on loopback over HTTPS (a certificate of its own, made
// with openssl, trusted through the kubeconfig it writes), speaking the REST shapes
// the real API documents for the calls the kubernetes provider makes: Pods, claims and
// NetworkPolicies of a namespace (POST, GET, list by labelSelector, DELETE, `?watch=true`
// streams of JSON events from a resourceVersion), namespaces, storage classes,
// selfsubjectaccessreviews, /version, and exec over the websocket channel protocol
// (v5.channel.k8s.io or v4: a binary message's first byte is its channel, 0 stdin,
// 1 stdout, 2 stderr, 3 the status as a v1 Status; v5's 255 closes one channel).
// Refusals are v1 Status objects with their code. Every request is recorded.
//
// Each Pod is backed by a REAL box of the local provider: its mounts become the box's, its
// bridges boxd's, its resources the box's limits; the Pod turns Running once boxd answers.
// Claims are folders, as the kubelet sees a volume: a claim's folder (`claims` given to the
// fake stand for the ones an operator made, and may name the folder, such as a server's
// STATE_ROOT/workspaces that "mounts" the claim), and a volume mount with a subPath is that
// folder's sub-path, made when missing (a folder) as the kubelet does; a Pod whose claim is
// missing fails. A file sub-path at /etc/passwd or /etc/group (a place a local box keeps for
// itself) is carried into the box's own file, again whenever it changes, as a bind would.
// emptyDirs are tmpfs. Exec runs only box-bridge (the command the provider runs), against
// that box's boxd socket on this host: the one translation the fake makes is that socket's
// path. A local box keeps the local provider's id mapping (box root is its host id there),
// where a real Pod with `hostUsers: false` sees its volumes idmapped (docs/kubernetes.md).
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import type http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { WebSocketServer, type WebSocket } from "ws";
import { selfSigned } from "./tls.js";
import { LocalProvider } from "../../src/boxes/local/provider.js";
import type { BoxMount, BoxSpec } from "../../src/boxes/types.js";

type Obj = Record<string, unknown> & {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string };
};

export interface RecordedCall {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  authorization: string | undefined;
  /** An exec's command (its repeated `command` parameter). */
  argv?: string[];
}

/** A claim that exists before the provider runs (an operator's), optionally on a given folder. */
export interface FakeClaim {
  name: string;
  accessModes: string[];
  dir?: string;
}

export interface FakeKubeOptions {
  /** A folder of the fake's own: claims' folders and the local boxes' state. */
  root: string;
  claims?: FakeClaim[];
  namespaces?: string[];
  storageClasses?: string[];
  /** Access reviews answered not allowed: "verb resource" or "verb resource/subresource". */
  deny?: string[];
  /** Access reviews answered by these RBAC rules (a Role's, of `namespace`) instead of `deny`. */
  rbac?: { namespace: string; rules: FakeRule[] };
  /** The bearer token the fake expects. */
  token: string;
  boxdBinary: string;
  bridgeBinary: string;
}

/** An RBAC rule as a Role holds it. */
export interface FakeRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** Whether a Role's rules in `namespace` allow an access review's attributes. */
function rbacAllows(rbac: { namespace: string; rules: FakeRule[] }, a: Record<string, string>): boolean {
  const has = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === "*" || x === v);
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : (a.resource ?? "");
  return (
    a.namespace === rbac.namespace &&
    rbac.rules.some(
      (r) =>
        has(r.apiGroups, a.group ?? "") &&
        has(r.resources, resource) &&
        has(r.verbs, a.verb ?? "") &&
        (!r.resourceNames?.length || has(r.resourceNames, a.name ?? "")),
    )
  );
}

const status = (code: number, reason: string, message: string) => ({
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: "Failure",
  message,
  reason,
  code,
});

const KINDS: Record<string, { kind: string; apiVersion: string }> = {
  pods: { kind: "Pod", apiVersion: "v1" },
  persistentvolumeclaims: { kind: "PersistentVolumeClaim", apiVersion: "v1" },
  networkpolicies: { kind: "NetworkPolicy", apiVersion: "networking.k8s.io/v1" },
};

const mibOf = (q: string | undefined, dflt: number): number => {
  const m = /^(\d+)(Mi|Gi)?$/.exec(q ?? "");
  return m ? Number(m[1]) * (m[2] === "Gi" ? 1024 : 1) : dflt;
};

let made: { key: string; cert: string } | undefined;

/** The fake's key and self-signed certificate for 127.0.0.1, made once per process. */
function certificate(): { key: string; cert: string } {
  if (made) return made;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fake-kube-"));
  try {
    const { key, cert: crt } = selfSigned(dir, { cn: "fake-kube", san: "IP:127.0.0.1", days: 1 });
    made = { key: fs.readFileSync(key, "utf8"), cert: fs.readFileSync(crt, "utf8") };
    return made;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export class FakeKube {
  readonly calls: RecordedCall[] = [];
  /** Objects by "resource/name" (one namespace at a time is all the provider uses). */
  readonly objects = new Map<string, Obj>();
  readonly local: LocalProvider;
  private readonly server: https.Server;
  private readonly cert: string;
  private readonly wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) =>
      protocols.has("v5.channel.k8s.io")
        ? "v5.channel.k8s.io"
        : protocols.has("v4.channel.k8s.io")
          ? "v4.channel.k8s.io"
          : false,
  });
  private rv = 100;
  private readonly events: { resource: string; type: string; object: Obj; rv: number }[] = [];
  private readonly watchers = new Set<{ resource: string; name?: string; res: http.ServerResponse }>();
  private readonly starting = new Set<Promise<unknown>>();
  private readonly children = new Set<number>();
  /** The file sub-paths carried into each Pod's box, by Pod name. */
  private readonly carried = new Map<string, fs.FSWatcher[]>();
  url = "";

  constructor(readonly o: FakeKubeOptions) {
    this.local = new LocalProvider({
      stateRoot: path.join(o.root, "boxes"),
      cgroupParent: "warren-test-k8s",
      boxdBinary: o.boxdBinary,
    });
    const { key, cert } = certificate();
    this.cert = cert;
    this.server = https.createServer({ key, cert }, (req, res) => void this.handle(req, res));
    this.server.on("upgrade", (req, sock, head) => this.upgrade(req, sock, head));
    for (const c of o.claims ?? []) {
      fs.mkdirSync(this.claimDir(c.name), { recursive: true });
      const claim: Obj = {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        metadata: { name: c.name, namespace: o.namespaces?.[0] ?? "default", resourceVersion: "1" },
        spec: { accessModes: c.accessModes, resources: { requests: { storage: "10Gi" } } },
        status: { phase: "Bound", accessModes: c.accessModes },
      };
      this.objects.set(`persistentvolumeclaims/${c.name}`, claim);
    }
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  /** A kubeconfig file for the fake, with its bearer token. */
  kubeconfig(file: string): string {
    fs.writeFileSync(
      file,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: "fake",
            cluster: {
              server: this.url,
              "certificate-authority-data": Buffer.from(this.cert).toString("base64"),
            },
          },
        ],
        users: [{ name: "warren", user: { token: this.o.token } }],
        contexts: [{ name: "fake", context: { cluster: "fake", user: "warren", namespace: "warren-boxes" } }],
        "current-context": "fake",
      }),
      { mode: 0o600 },
    );
    return file;
  }

  /** The host folder behind a claim. */
  claimDir(name: string): string {
    return this.o.claims?.find((c) => c.name === name)?.dir ?? path.join(this.o.root, "claims", name);
  }

  /** Stops every box and the server; what a test that started the fake calls, even on failure. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.starting]);
    for (const w of this.watchers) w.res.end();
    for (const pid of this.children)
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    for (const c of this.wss.clients) c.terminate();
    for (const pod of [...this.carried.keys()]) this.uncarry(pod);
    for (const b of await this.local.list()) await this.local.remove(b.id).catch(() => undefined);
    this.local.close();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  // ---- REST ---------------------------------------------------------------------------

  private emit(resource: string, type: string, object: Obj): void {
    const rv = ++this.rv;
    object.metadata.resourceVersion = String(rv);
    const snapshot = structuredClone(object);
    this.events.push({ resource, type, object: snapshot, rv });
    for (const w of this.watchers)
      if (w.resource === resource && (!w.name || w.name === object.metadata.name))
        w.res.write(`${JSON.stringify({ type, object: snapshot })}\n`);
  }

  private send(res: http.ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const body: unknown = text ? JSON.parse(text) : undefined;
    const method = req.method ?? "GET";
    this.calls.push({
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body,
      authorization: req.headers.authorization,
    });
    if (req.headers.authorization !== `Bearer ${this.o.token}`)
      return this.send(res, 401, status(401, "Unauthorized", "Unauthorized"));
    const p = url.pathname;
    if (p === "/version" && method === "GET")
      return this.send(res, 200, {
        major: "1",
        minor: "33",
        gitVersion: "v1.33.0-fake",
        platform: "linux/amd64",
      });
    let m = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(p);
    if (m && method === "GET")
      return (this.o.namespaces ?? []).includes(m[1]!)
        ? this.send(res, 200, {
            kind: "Namespace",
            apiVersion: "v1",
            metadata: { name: m[1] },
            status: { phase: "Active" },
          })
        : this.send(res, 404, status(404, "NotFound", `namespaces "${m[1]}" not found`));
    m = /^\/apis\/storage\.k8s\.io\/v1\/storageclasses\/([^/]+)$/.exec(p);
    if (m && method === "GET")
      return (this.o.storageClasses ?? []).includes(m[1]!)
        ? this.send(res, 200, {
            kind: "StorageClass",
            apiVersion: "storage.k8s.io/v1",
            metadata: { name: m[1] },
            provisioner: "fake.local/hostpath",
          })
        : this.send(res, 404, status(404, "NotFound", `storageclasses.storage.k8s.io "${m[1]}" not found`));
    if (p === "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" && method === "POST") {
      const a = (body as { spec: { resourceAttributes: Record<string, string> } }).spec.resourceAttributes;
      const what = `${a.verb} ${a.resource}${a.subresource ? `/${a.subresource}` : ""}`;
      const allowed = this.o.rbac ? rbacAllows(this.o.rbac, a) : !(this.o.deny ?? []).includes(what);
      return this.send(res, 201, {
        ...(body as object),
        status: { allowed, ...(allowed ? {} : { reason: "denied by the fake" }) },
      });
    }
    m =
      /^\/(?:api\/v1|apis\/networking\.k8s\.io\/v1)\/namespaces\/([^/]+)\/(pods|persistentvolumeclaims|networkpolicies)(?:\/([^/]+))?$/.exec(
        p,
      );
    if (!m)
      return this.send(
        res,
        404,
        status(404, "NotFound", `the server could not find the requested resource ${p}`),
      );
    const [, ns, resource, name] = m as unknown as [string, string, string, string | undefined];
    if (!(this.o.namespaces ?? []).includes(ns))
      return this.send(res, 404, status(404, "NotFound", `namespaces "${ns}" not found`));
    const key = (n: string) => `${resource}/${n}`;
    if (method === "GET" && !name && url.searchParams.get("watch") === "true")
      return this.watch(resource, url, res);
    if (method === "GET" && !name) {
      const sel = (url.searchParams.get("labelSelector") ?? "")
        .split(",")
        .filter(Boolean)
        .map((s) => s.split("="));
      const items = [...this.objects.entries()]
        .filter(([k]) => k.startsWith(`${resource}/`))
        .map(([, o]) => o)
        .filter((o) => sel.every(([k, v]) => o.metadata.labels?.[k!] === v));
      return this.send(res, 200, {
        kind: `${KINDS[resource]!.kind}List`,
        apiVersion: KINDS[resource]!.apiVersion,
        metadata: { resourceVersion: String(this.rv) },
        items,
      });
    }
    if (method === "GET" && name) {
      const o = this.objects.get(key(name));
      return o
        ? this.send(res, 200, o)
        : this.send(res, 404, status(404, "NotFound", `${resource} "${name}" not found`));
    }
    if (method === "POST" && !name) {
      const o = structuredClone(body) as Obj;
      if (this.objects.has(key(o.metadata.name)))
        return this.send(
          res,
          409,
          status(409, "AlreadyExists", `${resource} "${o.metadata.name}" already exists`),
        );
      o.metadata = {
        ...o.metadata,
        namespace: ns,
        uid: crypto.randomUUID(),
        creationTimestamp: new Date().toISOString(),
      } as Obj["metadata"];
      if (resource === "pods") o.status = { phase: "Pending" };
      if (resource === "persistentvolumeclaims") {
        fs.mkdirSync(this.claimDir(o.metadata.name), { recursive: true });
        o.status = { phase: "Bound" };
      }
      this.objects.set(key(o.metadata.name), o);
      this.emit(resource, "ADDED", o);
      if (resource === "pods") this.track(this.run(o));
      return this.send(res, 201, o);
    }
    if (method === "DELETE" && name) {
      const o = this.objects.get(key(name));
      if (!o) return this.send(res, 404, status(404, "NotFound", `${resource} "${name}" not found`));
      if (resource === "pods") {
        (o.metadata as Record<string, unknown>).deletionTimestamp = new Date().toISOString();
        this.emit(resource, "MODIFIED", o);
        this.uncarry(o.metadata.name);
        this.track(
          this.local.remove(o.metadata.name).finally(() => {
            this.objects.delete(key(name));
            this.emit(resource, "DELETED", o);
          }),
        );
      } else {
        this.objects.delete(key(name));
        if (resource === "persistentvolumeclaims")
          fs.rmSync(this.claimDir(name), { recursive: true, force: true });
        this.emit(resource, "DELETED", o);
      }
      return this.send(res, 200, o);
    }
    return this.send(res, 405, status(405, "MethodNotAllowed", `${method} is not allowed on ${p}`));
  }

  private track(p: Promise<unknown>): void {
    const t = p.catch(() => undefined).finally(() => this.starting.delete(t));
    this.starting.add(t);
  }

  /** A watch: the events after resourceVersion (or ADDED for what exists), then every new one, one JSON per line. */
  private watch(resource: string, url: URL, res: http.ServerResponse): void {
    const field = /^metadata\.name=(.+)$/.exec(url.searchParams.get("fieldSelector") ?? "");
    const name = field?.[1];
    const from = url.searchParams.get("resourceVersion");
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    const matches = (o: Obj) => !name || o.metadata.name === name;
    if (from)
      for (const e of this.events)
        if (e.rv > Number(from) && e.resource === resource && matches(e.object))
          res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
    if (!from)
      for (const [k, o] of this.objects)
        if (k.startsWith(`${resource}/`) && matches(o))
          res.write(`${JSON.stringify({ type: "ADDED", object: o })}\n`);
    const w = { resource, ...(name ? { name } : {}), res };
    this.watchers.add(w);
    res.on("close", () => this.watchers.delete(w));
  }

  // ---- a Pod's real box ----------------------------------------------------------------

  private async run(pod: Obj): Promise<void> {
    const id = pod.metadata.name;
    const spec = pod.spec as {
      containers: {
        command: string[];
        resources?: { limits?: Record<string, string> };
        volumeMounts?: { name: string; mountPath: string; subPath?: string; readOnly?: boolean }[];
      }[];
      volumes?: {
        name: string;
        persistentVolumeClaim?: { claimName: string };
        emptyDir?: { sizeLimit?: string };
      }[];
    };
    try {
      const c = spec.containers[0]!;
      const mounts: BoxMount[] = [];
      const files: { source: string; target: string }[] = [];
      for (const vm of c.volumeMounts ?? []) {
        const v = spec.volumes?.find((x) => x.name === vm.name);
        if (v?.emptyDir && vm.mountPath === "/tmp")
          mounts.push({
            kind: "tmpfs",
            target: "/tmp",
            sizeMib: mibOf(v.emptyDir.sizeLimit, 64),
            mode: 0o1777,
          });
        else if (v?.persistentVolumeClaim) {
          const claim = v.persistentVolumeClaim.claimName;
          if (!this.objects.has(`persistentvolumeclaims/${claim}`))
            throw new Error(`persistentvolumeclaim "${claim}" not found`);
          const dir = this.claimDir(claim);
          const source = vm.subPath ? path.join(dir, vm.subPath) : dir;
          if (path.relative(dir, source).startsWith(".."))
            throw new Error(`subPath ${JSON.stringify(vm.subPath)} leaves its volume`);
          if (vm.mountPath === "/etc/passwd" || vm.mountPath === "/etc/group") {
            if (!fs.statSync(source, { throwIfNoEntry: false })?.isFile())
              throw new Error(`subPath ${vm.subPath} is no file, and ${vm.mountPath} is one`);
            files.push({ source, target: vm.mountPath });
            continue;
          }
          // the kubelet makes a missing sub-path as a folder
          fs.mkdirSync(source, { recursive: true });
          mounts.push({ kind: "bind", source, target: vm.mountPath, readOnly: vm.readOnly ?? false });
        }
      }
      const bridges = [];
      for (let i = 0; i < c.command.length; i++)
        if (c.command[i] === "--bridge") {
          const [bname, port] = c.command[i + 1]!.split("=");
          bridges.push({ name: bname!, port: Number(port) });
        }
      const labels = { ...(pod.metadata.labels ?? {}), "warren.provider": "local" } as BoxSpec["labels"];
      const cpu = c.resources?.limits?.cpu ?? "1000m";
      await this.local.create({
        id,
        labels,
        mounts,
        limits: {
          memoryMib: mibOf(c.resources?.limits?.memory, 512),
          cpus: cpu.endsWith("m") ? Number(cpu.slice(0, -1)) / 1000 : Number(cpu),
          pids: Number(
            (pod.metadata as { annotations?: Record<string, string> }).annotations?.["warren.pids-limit"] ??
              4096,
          ),
          tmpMib: 64,
        },
        ...(bridges.length ? { bridges } : {}),
      });
      await this.local.start(id);
      if (!this.objects.has(`pods/${id}`)) return;
      this.carry(id, files);
      pod.status = {
        phase: "Running",
        startTime: new Date().toISOString(),
        containerStatuses: [
          {
            name: "boxd",
            ready: true,
            restartCount: 0,
            state: { running: { startedAt: new Date().toISOString() } },
          },
        ],
      };
      this.emit("pods", "MODIFIED", pod);
    } catch (err) {
      if (!this.objects.has(`pods/${id}`)) return;
      pod.status = { phase: "Failed", message: (err as Error).message };
      this.emit("pods", "MODIFIED", pod);
    }
  }

  /**
   * A file sub-path mounted at /etc/passwd or /etc/group: its content in the box's own file
   * (bound there by the local provider), again at every change, written in place as a bind
   * shows it.
   */
  private carry(pod: string, files: { source: string; target: string }[]): void {
    const boxDir = path.join(this.o.root, "boxes", "run", "boxes", pod);
    const watchers: fs.FSWatcher[] = [];
    for (const f of files) {
      const into = path.join(boxDir, path.basename(f.target));
      const copy = () => {
        try {
          const text = fs.readFileSync(f.source);
          if (!text.equals(fs.readFileSync(into))) fs.writeFileSync(into, text);
        } catch {
          // mid-write or gone: the next change copies again
        }
      };
      copy();
      watchers.push(fs.watch(f.source, copy));
    }
    this.carried.set(pod, watchers);
  }

  private uncarry(pod: string): void {
    for (const w of this.carried.get(pod) ?? []) w.close();
    this.carried.delete(pod);
  }

  // ---- exec ------------------------------------------------------------------------------

  private upgrade(req: http.IncomingMessage, sock: import("node:stream").Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://fake");
    this.calls.push({
      method: req.method ?? "GET",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body: undefined,
      authorization: req.headers.authorization,
      argv: url.searchParams.getAll("command"),
    });
    const refuse = (code: number, text: string) => {
      sock.end(
        `HTTP/1.1 ${code} ${text}\r\ncontent-type: application/json\r\n\r\n${JSON.stringify(status(code, text, text))}`,
      );
    };
    if (req.headers.authorization !== `Bearer ${this.o.token}`) return refuse(401, "Unauthorized");
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname);
    const pod = m ? this.objects.get(`pods/${m[2]}`) : undefined;
    if (!m || !pod) return refuse(404, "NotFound");
    if ((pod.status as { phase?: string }).phase !== "Running") return refuse(400, "BadRequest");
    this.wss.handleUpgrade(req, sock, head, (ws) => this.exec(ws, m[2]!, url.searchParams.getAll("command")));
  }

  private exec(ws: WebSocket, pod: string, command: string[]): void {
    const v5 = ws.protocol === "v5.channel.k8s.io";
    const finish = (st: object) => {
      ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify(st))]));
      ws.close(1000);
    };
    if (
      command.length !== 2 ||
      command[0] !== "/usr/lib/warren/box-bridge" ||
      command[1] !== "/run/boxd/boxd.sock"
    )
      return finish({
        metadata: {},
        status: "Failure",
        message: `the fake runs only box-bridge, not ${JSON.stringify(command)}`,
        reason: "InternalError",
      });
    const child = spawn(this.o.bridgeBinary, [this.local.endpoint(pod).path], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    if (child.pid) this.children.add(child.pid);
    child.stdin.on("error", () => {});
    ws.on("message", (data: Buffer) => {
      const channel = data[0];
      if (channel === 0) child.stdin.write(data.subarray(1));
      else if (channel === 255 && v5 && data[1] === 0) child.stdin.end();
    });
    ws.on("close", () => {
      if (child.exitCode === null) child.kill("SIGKILL");
    });
    child.stdout.on("data", (c: Buffer) => ws.send(Buffer.concat([Buffer.from([1]), c])));
    child.stderr.on("data", (c: Buffer) => ws.send(Buffer.concat([Buffer.from([2]), c])));
    child.on("close", (code) => {
      if (child.pid) this.children.delete(child.pid);
      if (ws.readyState !== ws.OPEN) return;
      finish(
        code === 0
          ? { metadata: {}, status: "Success" }
          : {
              metadata: {},
              status: "Failure",
              message: `command terminated with non-zero exit code: exit status ${code}`,
              reason: "NonZeroExitCode",
              details: { causes: [{ reason: "ExitCode", message: String(code) }] },
            },
      );
    });
  }
}
