// What the boxd protocol accepts (protocol.ts has its messages and framing): the checks
// boxd applies to what clients send (native/boxd/spec.c implements them with the same
// error messages), the shape check of boxd's own answers, and agents' calls.
import {
  MAX_FENCE_KEEP,
  MAX_FILE_RULES,
  MAX_PTY_SIZE,
  ProtocolError,
  type AgentCall,
  type BridgeMessage,
  type CallMessage,
  type ExecLimits,
  type ExecSpec,
  type FileAccess,
  type PtySpec,
  type ServerMessage,
} from "./protocol.js";

// ---- validation (boxd trusts nothing it parses) -----------------------------------
// The rules boxd applies to what clients send; native/boxd/spec.c implements them with
// the same error messages.

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function int(x: unknown, what: string, min: number, max: number): number {
  if (typeof x !== "number" || !Number.isInteger(x) || x < min || x > max)
    throw new ProtocolError(`${what} must be an integer from ${min} to ${max}`);
  return x;
}

function str(x: unknown, what: string): string {
  if (typeof x !== "string" || x.includes("\0"))
    throw new ProtocolError(`${what} must be a string without NUL`);
  return x;
}

function absPath(x: unknown, what: string): string {
  const s = str(x, what);
  if (!s.startsWith("/") || s.split("/").includes(".."))
    throw new ProtocolError(`${what} must be an absolute path without ..`);
  return s;
}

/** A folder relative to a home: plain names joined by "/" (no "", "." or ".." component). */
function relPath(x: unknown, what: string): string {
  const s = str(x, what);
  if (s.length === 0 || s.length > 1024 || s.split("/").some((c) => c === "" || c === "." || c === ".."))
    throw new ProtocolError(`${what} must be a folder relative to the home, plain names joined by /`);
  return s;
}

/** The smallest uid/gid an agent may run as; box root (0) and system ids are refused. */
export const MIN_AGENT_ID = 1000;
const MAX_ID = 2 ** 31 - 2;

/**
 * The rules boxd applies to an exec (native/boxd/spec.c refuses the same). The client checks
 * a request with them before it is sent, so a bad one fails with request.invalid at once.
 */
export function parseExecSpec(x: unknown): ExecSpec {
  if (!isRecord(x)) throw new ProtocolError("exec must be an object");
  if (!Array.isArray(x.argv) || x.argv.length === 0)
    throw new ProtocolError("exec.argv must be a non-empty array");
  const argv = x.argv.map((a, i) => str(a, `exec.argv[${i}]`));
  if (!isRecord(x.env)) throw new ProtocolError("exec.env must be an object");
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(x.env)) {
    if (k === "" || k.includes("=") || k.includes("\0"))
      throw new ProtocolError(`exec.env has a bad name ${JSON.stringify(k)}`);
    env[k] = str(v, `exec.env.${k}`);
  }
  const groups = x.groups === undefined ? [] : x.groups;
  if (!Array.isArray(groups) || groups.length > 32)
    throw new ProtocolError("exec.groups must be an array of at most 32 ids");
  const spec: ExecSpec = {
    argv,
    env,
    cwd: absPath(x.cwd, "exec.cwd"),
    uid: int(x.uid, "exec.uid", MIN_AGENT_ID, MAX_ID),
    gid: int(x.gid, "exec.gid", MIN_AGENT_ID, MAX_ID),
    groups: groups.map((g, i) => int(g, `exec.groups[${i}]`, MIN_AGENT_ID, MAX_ID)),
    timeoutMs: int(x.timeoutMs ?? 0, "exec.timeoutMs", 0, 7 * 24 * 3600 * 1000),
  };
  if (x.agentDir !== undefined) spec.agentDir = absPath(x.agentDir, "exec.agentDir");
  if (x.fence !== undefined) {
    if (!isRecord(x.fence)) throw new ProtocolError("exec.fence must be an object");
    const fence: NonNullable<ExecSpec["fence"]> = { home: absPath(x.fence.home, "exec.fence.home") };
    for (const k of ["keep", "hide"] as const) {
      const list = x.fence[k];
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.length > MAX_FENCE_KEEP)
        throw new ProtocolError(`exec.fence.${k} must be an array of at most ${MAX_FENCE_KEEP} folders`);
      fence[k] = list.map((p, i) => relPath(p, `exec.fence.${k}[${i}]`));
    }
    const place = x.fence.place;
    if (place !== undefined) {
      if (!isRecord(place)) throw new ProtocolError("exec.fence.place must be an object");
      fence.place = {
        from: relPath(place.from, "exec.fence.place.from"),
        at: relPath(place.at, "exec.fence.place.at"),
      };
    }
    spec.fence = fence;
  }
  if (x.workspaceDir !== undefined) spec.workspaceDir = absPath(x.workspaceDir, "exec.workspaceDir");
  if (x.selfDir !== undefined) spec.selfDir = absPath(x.selfDir, "exec.selfDir");
  if (x.files !== undefined) {
    if (!isRecord(x.files)) throw new ProtocolError("exec.files must be an object");
    const lists = { read: x.files.read, write: x.files.write };
    const files: FileAccess = { read: [], write: [] };
    for (const k of ["read", "write"] as const) {
      const list = lists[k];
      if (!Array.isArray(list) || list.length > MAX_FILE_RULES)
        throw new ProtocolError(`exec.files.${k} must be an array of at most ${MAX_FILE_RULES} paths`);
      files[k] = list.map((p, i) => absPath(p, `exec.files.${k}[${i}]`));
    }
    spec.files = files;
  }
  if (x.bindPorts !== undefined) {
    if (!isRecord(x.bindPorts)) throw new ProtocolError("exec.bindPorts must be an object");
    const first = int(x.bindPorts.first, "exec.bindPorts.first", 1, 65535);
    const last = int(x.bindPorts.last, "exec.bindPorts.last", first, Math.min(65535, first + 999));
    spec.bindPorts = { first, last };
  }
  if (x.network !== undefined) {
    if (!isRecord(x.network)) throw new ProtocolError("exec.network must be an object");
    const list = x.network.connect;
    if (!Array.isArray(list) || list.length < 1 || list.length > 8)
      throw new ProtocolError("exec.network.connect must be an array of 1 to 8 port ranges");
    spec.network = {
      connect: list.map((r: unknown, i) => {
        if (!isRecord(r)) throw new ProtocolError(`exec.network.connect[${i}] must be an object`);
        const first = int(r.first, `exec.network.connect[${i}].first`, 1, 65535);
        const last = int(r.last, `exec.network.connect[${i}].last`, first, Math.min(65535, first + 999));
        return { first, last };
      }),
    };
  }
  if (x.generation !== undefined) {
    if (typeof x.generation !== "boolean") throw new ProtocolError("exec.generation must be a boolean");
    spec.generation = x.generation;
  }
  if (x.trace !== undefined) {
    if (typeof x.trace !== "boolean") throw new ProtocolError("exec.trace must be a boolean");
    spec.trace = x.trace;
  }
  if (x.limits !== undefined) {
    if (!isRecord(x.limits)) throw new ProtocolError("exec.limits must be an object");
    const limits: ExecLimits = {};
    if (x.limits.memoryMib !== undefined)
      limits.memoryMib = int(x.limits.memoryMib, "exec.limits.memoryMib", 4, 1 << 24);
    if (x.limits.pids !== undefined) limits.pids = int(x.limits.pids, "exec.limits.pids", 1, 1 << 22);
    spec.limits = limits;
  }
  return spec;
}

/** The rules boxd applies to a terminal (native/boxd/pty.c refuses the same). */
export function parsePtySpec(x: unknown): PtySpec {
  if (!isRecord(x)) throw new ProtocolError("pty must be an object");
  for (const k of ["timeoutMs", "agentDir", "generation", "trace"])
    if (x[k] !== undefined) throw new ProtocolError("a terminal takes no timeoutMs, agentDir or generation");
  const { timeoutMs: _t, ...exec } = parseExecSpec(x);
  return {
    ...exec,
    cols: int(x.cols, "pty.cols", 1, MAX_PTY_SIZE),
    rows: int(x.rows, "pty.rows", 1, MAX_PTY_SIZE),
  };
}

/** Client side: boxd is trusted, so its messages are only shape-checked. */
export function parseServerMessage(payload: Buffer): ServerMessage {
  const x = parseJson(payload);
  switch (x.type) {
    case "pong":
    case "started":
    case "exit":
    case "forwarded":
    case "calls":
    case "bridges":
    case "error":
      return x as unknown as ServerMessage;
    case "bridge":
      int(x.id, "bridge.id", 1, Number.MAX_SAFE_INTEGER);
      int(x.uid, "bridge.uid", 0, 2 ** 32 - 1);
      str(x.name, "bridge.name");
      return x as unknown as BridgeMessage;
    case "call":
      int(x.id, "call.id", 1, Number.MAX_SAFE_INTEGER);
      int(x.uid, "call.uid", 0, 2 ** 32 - 1);
      return x as unknown as CallMessage;
    default:
      throw new ProtocolError(`unknown message ${JSON.stringify(x.type)}`);
  }
}

function parseJson(payload: Buffer): Record<string, unknown> {
  let x: unknown;
  try {
    x = JSON.parse(payload.toString("utf8"));
  } catch {
    throw new ProtocolError("control frame is not JSON");
  }
  if (!isRecord(x)) throw new ProtocolError("control frame is not an object");
  return x;
}

/**
 * An agent's request, from its command in the box (nothing in it is trusted; who calls is
 * the Call's uid, never a field here). Refused with a ProtocolError that says what is wrong.
 */
export function parseAgentCall(x: unknown): AgentCall {
  if (!isRecord(x)) throw new ProtocolError("the request must be an object");
  if (x.op === "list") {
    if (Object.keys(x).length !== 1) throw new ProtocolError("list takes nothing else");
    return { op: "list" };
  }
  if (x.op === "store") {
    const extra = Object.keys(x).filter((k) => !["op", "name", "path"].includes(k));
    if (extra.length > 0)
      throw new ProtocolError(`store takes a name and a path only, not ${extra.join(", ")}`);
    const name = str(x.name, "name");
    if (name.length === 0 || name.length > 128) throw new ProtocolError("name must be 1 to 128 characters");
    const path = absPath(x.path, "path");
    if (path.length > 4096) throw new ProtocolError("path must be at most 4096 characters");
    return { op: "store", name, path };
  }
  throw new ProtocolError('op must be "list" or "store"');
}
