// boxd: the daemon inside every box. It runs as box root with a few capabilities
// (see docs/boxes.md), listens on one unix socket in a root-only folder, and runs
// agents' commands through the native helper, each in a cgroup of its own so that a
// timeout or a cancel kills the whole process tree. It imports only node builtins and
// its protocol module, and is bundled to one CommonJS file (dist/boxd/boxd.cjs).
//
// Arguments:
//   --socket PATH          unix socket to listen on
//   --spawn PATH           the boxd-spawn helper
//   --seccomp PATH         the seccomp program for agents' processes
//   --cgroup-version 1|2
//   --cgroup NAME=DIR      an agents' cgroup folder per hierarchy (repeat; v1 names are
//                          the hierarchy's controllers, e.g. "memory", "cpu,cpuacct")
//   --ready-fd N           write "ready\n" there once listening, then close it

import { spawn, type ChildProcessByStdio } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import type { Readable, Writable } from "node:stream";
import {
  FrameDecoder,
  FrameKind,
  ProtocolError,
  encodeControl,
  encodeFrame,
  parseClientMessage,
  parseOpen,
  splitPayload,
  type ErrorCode,
  type ExecResult,
  type ExecSpec,
  type ExecUsage,
  type PingResult,
  type ServerMessage,
} from "./protocol.js";

interface Config {
  socket: string;
  spawnHelper: string;
  seccomp: string;
  cgroupVersion: 1 | 2;
  cgroups: { name: string; dir: string }[];
  readyFd: number | null;
}

function log(message: string): void {
  process.stderr.write(`${new Date().toISOString()} boxd: ${message}\n`);
}

function parseArgs(argv: string[]): Config {
  const config: Config = {
    socket: "",
    spawnHelper: "",
    seccomp: "",
    cgroupVersion: 1,
    cgroups: [],
    readyFd: null,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${key} needs a value`);
    switch (key) {
      case "--socket":
        config.socket = value;
        break;
      case "--spawn":
        config.spawnHelper = value;
        break;
      case "--seccomp":
        config.seccomp = value;
        break;
      case "--cgroup-version":
        config.cgroupVersion = value === "2" ? 2 : 1;
        break;
      case "--cgroup": {
        const eq = value.indexOf("=");
        if (eq < 1) throw new Error(`--cgroup wants NAME=DIR, got ${value}`);
        config.cgroups.push({ name: value.slice(0, eq), dir: value.slice(eq + 1) });
        break;
      }
      case "--ready-fd":
        config.readyFd = Number(value);
        break;
      default:
        throw new Error(`unknown argument ${key}`);
    }
  }
  if (!config.socket || !config.spawnHelper || !config.seccomp)
    throw new Error("--socket, --spawn and --seccomp are required");
  return config;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// ---- per-exec cgroups ------------------------------------------------------------

class ExecCgroups {
  constructor(
    private readonly version: 1 | 2,
    private readonly roots: { name: string; dir: string }[],
  ) {}

  private has(root: { name: string }, controller: string): boolean {
    return this.version === 2 || root.name.split(",").includes(controller);
  }

  /** Creates the exec's cgroup in every hierarchy; returns the folders for the helper. */
  create(name: string): string[] {
    const dirs: string[] = [];
    for (const root of this.roots) {
      const dir = `${root.dir}/${name}`;
      fs.mkdirSync(dir);
      dirs.push(dir);
    }
    return dirs;
  }

  /** A command's own limits, tighter than the box's. */
  limit(name: string, spec: ExecSpec): void {
    const memory = spec.limits?.memoryMib;
    const pids = spec.limits?.pids;
    for (const root of this.roots) {
      const dir = `${root.dir}/${name}`;
      if (memory !== undefined && this.has(root, "memory")) {
        const bytes = String(memory * 1024 * 1024);
        fs.writeFileSync(`${dir}/${this.version === 2 ? "memory.max" : "memory.limit_in_bytes"}`, bytes);
      }
      if (pids !== undefined && this.has(root, "pids")) fs.writeFileSync(`${dir}/pids.max`, String(pids));
    }
  }

  procs(name: string): number[] {
    const out = new Set<number>();
    for (const root of this.roots) {
      let text = "";
      try {
        text = fs.readFileSync(`${root.dir}/${name}/cgroup.procs`, "utf8");
      } catch {
        continue;
      }
      for (const line of text.split("\n")) {
        const pid = Number(line);
        if (line && Number.isInteger(pid) && pid > 0) out.add(pid);
      }
    }
    return [...out];
  }

  /** SIGKILLs every process in the exec's cgroup until none is left (forks included). */
  async kill(name: string): Promise<boolean> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const pids = this.procs(name);
      if (pids.length === 0) return true;
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      if (Date.now() > deadline) return false;
      await sleep(1);
    }
  }

  usage(name: string): ExecUsage {
    const usage: ExecUsage = { cpuSeconds: null, peakMemoryBytes: null };
    for (const root of this.roots) {
      const dir = `${root.dir}/${name}`;
      try {
        if (this.version === 1) {
          if (this.has(root, "cpuacct"))
            usage.cpuSeconds = Number(fs.readFileSync(`${dir}/cpuacct.usage`, "utf8")) / 1e9;
          if (this.has(root, "memory"))
            usage.peakMemoryBytes = Number(fs.readFileSync(`${dir}/memory.max_usage_in_bytes`, "utf8"));
        } else {
          const stat = fs.readFileSync(`${dir}/cpu.stat`, "utf8");
          const m = /^usage_usec (\d+)$/m.exec(stat);
          if (m?.[1]) usage.cpuSeconds = Number(m[1]) / 1e6;
          usage.peakMemoryBytes = Number(fs.readFileSync(`${dir}/memory.peak`, "utf8"));
        }
      } catch {
        // a file this kernel does not have: that figure stays null
      }
    }
    return usage;
  }

  /** Removes the exec's cgroup if it is empty; false if processes are left in it. */
  remove(name: string): boolean {
    if (this.procs(name).length > 0) return false;
    let ok = true;
    for (const root of this.roots) {
      try {
        fs.rmdirSync(`${root.dir}/${name}`);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") ok = false;
      }
    }
    return ok;
  }

  names(): string[] {
    const first = this.roots[0];
    if (!first) return [];
    try {
      return fs
        .readdirSync(first.dir, { withFileTypes: true })
        .filter((d) => d.isDirectory() && d.name.startsWith("x"))
        .map((d) => d.name);
    } catch {
      return [];
    }
  }
}

// ---- helpers ----------------------------------------------------------------------

/** A boxd-spawn process that has joined its exec cgroup and waits for its command. */
interface Helper {
  name: string;
  child: ChildProcessByStdio<Writable, Readable, Readable>;
  /** fd 3 of the helper: the command's options, NUL-separated, then EOF. */
  spec: Writable;
}

/** The helper's options for one command; its environment is exactly spec.env. */
function helperOptions(spec: ExecSpec, seccomp: string): string[] {
  const o = ["--uid", String(spec.uid), "--gid", String(spec.gid), "--cwd", spec.cwd, "--seccomp", seccomp];
  if (spec.groups.length) o.push("--groups", spec.groups.join(","));
  if (spec.agentDir) o.push("--agent-dir", spec.agentDir);
  for (const [k, v] of Object.entries(spec.env)) o.push("--env", `${k}=${v}`);
  o.push("--", ...spec.argv);
  return o;
}

// ---- the daemon --------------------------------------------------------------------

class Boxd {
  private readonly started = Date.now();
  private readonly cgroups: ExecCgroups;
  private readonly active = new Set<string>();
  /** Exec cgroups started by generations; forgotten once empty. */
  private readonly generations = new Set<string>();
  private counter = 0;
  /** One helper kept ready, so a command does not wait for a cgroup migration. */
  private prepared: Helper | null = null;
  private connections = 0;
  private gcTimer: NodeJS.Timeout | null = null;

  constructor(private readonly config: Config) {
    this.cgroups = new ExecCgroups(config.cgroupVersion, config.cgroups);
  }

  listen(): net.Server {
    try {
      fs.unlinkSync(this.config.socket);
    } catch {
      // not there
    }
    const server = net.createServer({ allowHalfOpen: true }, (sock) => this.accept(sock));
    server.listen(this.config.socket, () => {
      fs.chmodSync(this.config.socket, 0o600);
      // The first ready helper starts before boxd says it is ready: its cgroup migration
      // then overlaps the server's ping and first command instead of delaying them.
      this.prepare();
      if (this.config.readyFd !== null) {
        try {
          fs.writeSync(this.config.readyFd, "ready\n");
          fs.closeSync(this.config.readyFd);
        } catch (err) {
          log(`ready fd: ${(err as Error).message}`);
        }
      }
      log(`listening on ${this.config.socket}`);
    });
    // Commands that left processes behind keep their cgroup; empty ones are swept.
    setInterval(() => this.sweep(), 10_000).unref();
    return server;
  }

  /** Starts a helper in a new exec cgroup; it waits on fd 3 for its command. */
  private spawnHelper(pooled: boolean): Helper {
    const name = `x${++this.counter}-${Date.now().toString(36)}`;
    let dirs: string[];
    try {
      dirs = this.cgroups.create(name);
    } catch (err) {
      this.cgroups.remove(name);
      throw err;
    }
    const args: string[] = [];
    for (const dir of dirs) args.push("--cgroup", dir);
    args.push("--spec-fd", "3");
    let child;
    try {
      child = spawn(this.config.spawnHelper, args, {
        env: {},
        stdio: ["pipe", "pipe", "pipe", "pipe"],
        argv0: "boxd-spawn",
      });
    } catch (err) {
      this.cgroups.remove(name);
      throw err;
    }
    const spec = child.stdio[3];
    if (!spec || !("write" in spec)) throw new Error("the helper has no spec pipe");
    const helper: Helper = { name, child: child, spec: spec };
    if (pooled) {
      // A ready helper that dies unused (it should not) is dropped, and its cgroup with it.
      const drop = (): void => {
        if (this.prepared === helper) this.prepared = null;
        this.cgroups.remove(name);
      };
      child.once("exit", drop);
      child.once("error", drop);
    }
    return helper;
  }

  private prepare(): void {
    if (this.prepared) return;
    try {
      this.prepared = this.spawnHelper(true);
    } catch (err) {
      log(`cannot prepare a helper: ${(err as Error).message}`);
    }
  }

  private takePrepared(): Helper | null {
    const h = this.prepared;
    this.prepared = null;
    if (!h || h.child.exitCode !== null || h.child.signalCode !== null) return null;
    h.child.removeAllListeners("exit");
    h.child.removeAllListeners("error");
    return h;
  }

  private sweep(): void {
    for (const name of this.cgroups.names())
      if (!this.active.has(name) && name !== this.prepared?.name) this.cgroups.remove(name);
  }

  /** With --expose-gc: collect once boxd has been idle a moment, so its heap shrinks back. */
  private idle(): void {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc || this.connections > 0) return;
    if (this.gcTimer) clearTimeout(this.gcTimer);
    this.gcTimer = setTimeout(() => {
      this.gcTimer = null;
      if (this.connections === 0) gc();
    }, 1000);
    this.gcTimer.unref();
  }

  private accept(sock: net.Socket): void {
    this.connections++;
    if (this.gcTimer) {
      clearTimeout(this.gcTimer);
      this.gcTimer = null;
    }
    sock.once("close", () => {
      this.connections--;
      this.idle();
    });
    const decoder = new FrameDecoder();
    const onData = (chunk: Buffer): void => {
      let frames;
      try {
        frames = decoder.push(chunk, 1);
      } catch (err) {
        fail(sock, "invalid", (err as Error).message);
        return;
      }
      const first = frames[0];
      if (!first) return;
      sock.off("data", onData);
      if (first.kind !== FrameKind.control) {
        fail(sock, "invalid", "the first frame must be a control frame");
        return;
      }
      let open;
      try {
        open = parseOpen(first.payload);
      } catch (err) {
        fail(
          sock,
          err instanceof ProtocolError && /reserved/.test(err.message) ? "unsupported" : "invalid",
          (err as Error).message,
        );
        return;
      }
      switch (open.op) {
        case "ping":
          send(sock, { type: "pong", ...this.ping() });
          sock.end();
          return;
        case "exec": {
          let pending;
          try {
            pending = decoder.push(Buffer.alloc(0));
          } catch (err) {
            fail(sock, "invalid", (err as Error).message);
            return;
          }
          this.exec(sock, open.exec, decoder, pending);
          return;
        }
        case "forward":
          this.forward(sock, open.port, decoder.rest());
          return;
        case "pty":
        case "egress":
        case "call":
          fail(sock, "unsupported", `${open.op} is not implemented yet`);
          return;
      }
    };
    sock.on("data", onData);
    sock.on("error", () => sock.destroy());
  }

  ping(): PingResult {
    let rss = 0;
    let anon = 0;
    try {
      const status = fs.readFileSync("/proc/self/status", "utf8");
      rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
      anon = Number(/^RssAnon:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
    } catch {
      rss = process.memoryUsage.rss();
    }
    let pss = 0;
    try {
      pss =
        Number(/^Pss:\s+(\d+) kB/m.exec(fs.readFileSync("/proc/self/smaps_rollup", "utf8"))?.[1] ?? 0) * 1024;
    } catch {
      // kernels without smaps_rollup
    }
    let processes = 0;
    let generationProcesses = 0;
    for (const name of this.cgroups.names()) {
      if (name === this.prepared?.name) continue;
      const n = this.cgroups.procs(name).length;
      processes += n;
      if (this.generations.has(name)) {
        generationProcesses += n;
        if (n === 0 && !this.active.has(name)) this.generations.delete(name);
      }
    }
    return {
      pid: process.pid,
      rssBytes: rss,
      anonBytes: anon,
      pssBytes: pss,
      uptimeMs: Date.now() - this.started,
      execs: this.active.size,
      processes,
      generationProcesses,
    };
  }

  private exec(
    sock: net.Socket,
    spec: ExecSpec,
    decoder: FrameDecoder,
    pending: { kind: FrameKind; payload: Buffer }[],
  ): void {
    const begun = performance.now();
    let helper: Helper;
    try {
      helper = this.takePrepared() ?? this.spawnHelper(false);
    } catch (err) {
      fail(sock, "spawn_failed", `cannot start the command: ${(err as Error).message}`);
      return;
    }
    try {
      this.cgroups.limit(helper.name, spec);
    } catch (err) {
      helper.spec.end(); // the helper exits unused; the sweep removes its cgroup
      fail(sock, "spawn_failed", `cannot set the command's limits: ${(err as Error).message}`);
      return;
    }
    const { name, child } = helper;
    this.active.add(name);
    if (spec.generation) this.generations.add(name);
    // The rest of the helper's options: it has joined its cgroups and waits for them.
    const opts = helperOptions(spec, this.config.seccomp);
    helper.spec.on("error", () => undefined);
    helper.spec.end(Buffer.from(opts.map((o) => `${o}\0`).join(""), "utf8"));
    setImmediate(() => this.prepare());

    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let timedOut = false;
    let cancelled = false;
    let finished = false;
    let killing: Promise<boolean> | null = null;
    let open = 2;
    let grace: NodeJS.Timeout | null = null;

    const killTree = (): Promise<boolean> => (killing ??= this.cgroups.kill(name));

    const timer =
      spec.timeoutMs > 0
        ? setTimeout(() => {
            timedOut = true;
            void killTree();
          }, spec.timeoutMs)
        : null;

    const finish = async (): Promise<void> => {
      if (finished || !exit) return;
      finished = true;
      if (timer) clearTimeout(timer);
      if (grace) clearTimeout(grace);
      child.stdout.destroy();
      child.stderr.destroy();
      if (killing) await killing;
      const usage = this.cgroups.usage(name);
      this.active.delete(name);
      const result: ExecResult = {
        exitCode: exit.code,
        signal: exit.signal,
        timedOut,
        cancelled,
        durationMs: Math.round(performance.now() - begun),
        usage,
      };
      if (!sock.destroyed) {
        send(sock, { type: "exit", ...result });
        sock.end();
      }
      // After the answer: removing a cgroup waits for the kernel's cgroup lock, which a
      // concurrent migration (the next ready helper) may hold for a while. A cgroup that
      // still holds processes (left in the background) stays until the sweep finds it empty.
      setImmediate(() => this.cgroups.remove(name));
    };

    const cancel = (): void => {
      if (finished || exit) return;
      cancelled = true;
      void killTree();
    };

    // Output waits for the client: when the socket's buffer is full, both pipes pause
    // until it drains (the command then blocks on a full pipe, as in a terminal).
    let paused = false;
    const pump = (stream: Readable, kind: FrameKind): void => {
      stream.on("data", (chunk: Buffer) => {
        if (sock.destroyed) return;
        let ok = true;
        for (const part of splitPayload(chunk)) ok = sock.write(encodeFrame(kind, part));
        if (!ok && !paused) {
          paused = true;
          child.stdout.pause();
          child.stderr.pause();
          sock.once("drain", () => {
            paused = false;
            child.stdout.resume();
            child.stderr.resume();
          });
        }
      });
      stream.on("error", () => undefined);
      stream.on("close", () => {
        open--;
        if (open === 0) void finish();
      });
    };
    pump(child.stdout, FrameKind.stdout);
    pump(child.stderr, FrameKind.stderr);
    child.stdin.on("error", () => undefined);

    child.on("error", (err) => {
      if (exit) return;
      exit = { code: 126, signal: null };
      log(`spawn ${name}: ${err.message}`);
      void finish();
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      // Output still open after the command ended belongs to processes it left
      // running in the background: the answer does not wait for them.
      if (open > 0) grace = setTimeout(() => void finish(), 100);
      else void finish();
    });

    send(sock, { type: "started", pid: child.pid ?? 0 });

    const onFrame = (frame: { kind: FrameKind; payload: Buffer }): void => {
      switch (frame.kind) {
        case FrameKind.stdin:
          if (child.stdin.writable) child.stdin.write(frame.payload);
          return;
        case FrameKind.control: {
          let message;
          try {
            message = parseClientMessage(frame.payload);
          } catch {
            cancel();
            return;
          }
          switch (message.type) {
            case "stdin_eof":
              child.stdin.end();
              return;
            case "cancel":
              cancel();
              return;
            case "resize":
              return;
          }
          return;
        }
        case FrameKind.stdout:
        case FrameKind.stderr:
        case FrameKind.data:
          cancel();
          return;
      }
    };
    for (const frame of pending) onFrame(frame);
    sock.on("data", (chunk: Buffer) => {
      let frames;
      try {
        frames = decoder.push(chunk);
      } catch {
        cancel();
        return;
      }
      for (const frame of frames) onFrame(frame);
    });
    // A client that goes away cancels its command.
    sock.on("end", () => {
      if (!exit) cancel();
    });
    sock.on("close", () => {
      if (!exit) cancel();
    });
  }

  private forward(sock: net.Socket, port: number, early: Buffer): void {
    sock.pause();
    const target = net.connect({ host: "127.0.0.1", port, allowHalfOpen: true });
    target.once("error", (err) => {
      if (!sock.destroyed) fail(sock, "forward_refused", `127.0.0.1:${port}: ${err.message}`);
    });
    target.once("connect", () => {
      target.removeAllListeners("error");
      target.on("error", () => sock.destroy());
      sock.on("error", () => target.destroy());
      send(sock, { type: "forwarded" });
      if (early.length) target.write(early);
      sock.pipe(target);
      target.pipe(sock);
      sock.resume();
    });
  }
}

function send(sock: net.Socket, message: ServerMessage): void {
  if (!sock.destroyed) sock.write(encodeControl(message));
}

function fail(sock: net.Socket, code: ErrorCode, message: string): void {
  send(sock, { type: "error", code, message });
  sock.end();
}

function main(): void {
  process.umask(0o022);
  const config = parseArgs(process.argv.slice(2));
  process.on("uncaughtException", (err) => log(`uncaught: ${err.stack ?? err.message}`));
  process.on("SIGTERM", () => process.exit(0));
  new Boxd(config).listen();
}

main();
