// The boxes this server has running now, who started each command in them, and one queue
// of lifecycle steps per machine: the state the runtime's parts share.
import type { BoxHandle } from "../boxes/index.js";
import type { CallsChannel } from "../boxd/index.js";
import type { BoxExec } from "./exec-port.js";
import type { CommandOwner } from "./health.js";
import { KeyedLock } from "../boxes/kit/lock.js";

export interface Live {
  box: BoxHandle;
  boxd: BoxExec;
  lastActivity: number;
  liveExecs: number;
  /** Terminals open in it: a frozen one would answer its user nothing, so it is not paused. */
  openPtys?: number;
  /** Frozen in memory (the provider's pause): boxd answers nothing until it is resumed. */
  paused?: boolean;
  /** Adopted paused after a server restart: its standing channels open once it is resumed. */
  channelsClosed?: boolean;
  calls?: CallsChannel;
  bridges?: CallsChannel;
}

export class LiveBoxes {
  readonly #live = new Map<string, Live>();
  readonly #locks = new KeyedLock();
  /** Who started each command tree (by its cgroup name), per machine. */
  readonly #owners = new Map<string, Map<string, CommandOwner>>();

  get(machineId: string): Live | undefined {
    return this.#live.get(machineId);
  }

  has(machineId: string): boolean {
    return this.#live.has(machineId);
  }

  set(machineId: string, live: Live): void {
    this.#live.set(machineId, live);
  }

  /** Forgets the machine's box and its commands' owners; returns what it was. */
  delete(machineId: string): Live | undefined {
    const live = this.#live.get(machineId);
    this.#live.delete(machineId);
    this.#owners.delete(machineId);
    return live;
  }

  entries(): [string, Live][] {
    return [...this.#live];
  }

  /** The boxes running now (not paused). */
  running(): [string, Live][] {
    return [...this.#live].filter(([, l]) => !l.paused);
  }

  ids(): string[] {
    return [...this.#live.keys()];
  }

  /** Marks activity so the idle timer starts over. */
  touch(machineId: string): void {
    const live = this.#live.get(machineId);
    if (live) live.lastActivity = Date.now();
  }

  own(machineId: string, command: string, owner: CommandOwner): void {
    let owners = this.#owners.get(machineId);
    if (!owners) this.#owners.set(machineId, (owners = new Map()));
    owners.set(command, owner);
  }

  ownerOf(machineId: string, command: string): CommandOwner | undefined {
    return this.#owners.get(machineId)?.get(command);
  }

  /** Forgets the owners of the machine's commands that are no longer present. */
  keepOwners(machineId: string, present: Set<string>): void {
    const owners = this.#owners.get(machineId);
    if (!owners) return;
    for (const name of owners.keys()) if (!present.has(name)) owners.delete(name);
  }

  /** Runs `fn` after every earlier call for the same machine has settled. */
  async serial<T>(machineId: string, fn: () => Promise<T>): Promise<T> {
    return this.#locks.run(machineId, fn);
  }
}
