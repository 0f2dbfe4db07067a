// What the store has written, table by table, so that a service may keep rows in memory
// and never serve one that changed. The store's driver is wrapped: every statement that is
// not a read bumps the generation of the tables it writes (and of every table whose rows a
// cascade may change with them) once it has completed, and again when its transaction
// ends. A statement the wrapper cannot place bumps every table.
//
// A memo's entry holds the stamp taken before its rows were read; it is served only while
// no table it depends on has been bumped since. A write is visible to readers only after its
// commit, and the bump follows the commit, so an entry read before it is stale by then and
// one read after it is fresh. The rule holds for this process's writes: one server owns a
// state tree (the boot lock), and nothing else writes its database while it runs.
import { getTableConfig, type PgTable } from "drizzle-orm/pg-core";
import { getTableName } from "drizzle-orm";

/** What a statement wrote: a table (and whether it deleted), or null for what cannot be told. */
export type Written = { table: string; delete: boolean } | null;

export class Changes {
  readonly #gens = new Map<string, number>();
  /** Bumped with every table: a statement of unknown reach. */
  #all = 0;
  /** For each table, the tables whose rows a write to it may change (itself included). */
  readonly #reach: Map<string, string[]>;

  constructor(tables: readonly PgTable[]) {
    const children = new Map<string, Set<string>>();
    for (const t of tables) {
      const name = getTableName(t);
      for (const fk of getTableConfig(t).foreignKeys) {
        const parent = getTableName(fk.reference().foreignTable);
        let set = children.get(parent);
        if (!set) children.set(parent, (set = new Set()));
        set.add(name);
      }
    }
    this.#reach = new Map();
    for (const t of tables) {
      const name = getTableName(t);
      const seen = new Set([name]);
      const todo = [name];
      for (let cur = todo.pop(); cur !== undefined; cur = todo.pop())
        for (const c of children.get(cur) ?? [])
          if (!seen.has(c)) {
            seen.add(c);
            todo.push(c);
          }
      this.#reach.set(name, [...seen]);
    }
  }

  /** A number that changes whenever any of `tables` is written. */
  stamp(tables: readonly string[]): number {
    let s = this.#all;
    for (const t of tables) s += this.#gens.get(t) ?? 0;
    return s;
  }

  /** Records a write (null: to any table); a delete reaches the tables its cascades may change. */
  bump(w: Written): void {
    if (w === null || !this.#reach.has(w.table)) {
      this.#all++;
      return;
    }
    for (const t of w.delete ? this.#reach.get(w.table)! : [w.table])
      this.#gens.set(t, (this.#gens.get(t) ?? 0) + 1);
  }

  /**
   * The table a statement writes: undefined for a read or a statement that writes no rows
   * (begin, commit, set...), null when it cannot be told.
   */
  static written(text: string): Written | undefined {
    // a compound read's first part may be parenthesised: "(select ...) union (select ...)"
    const s = text.trimStart().replace(/^\(\s*(?=select\b)/i, "");
    const verb = /^[a-z]+/i.exec(s)?.[0]?.toLowerCase();
    switch (verb) {
      case "select":
      case "begin":
      case "start":
      case "commit":
      case "end":
      case "rollback":
      case "savepoint":
      case "release":
      case "set":
      case "show":
      case "explain":
        return undefined;
      case "insert":
      case "update":
      case "delete": {
        const m =
          /^(?:insert\s+into|update(?:\s+only)?|delete\s+from(?:\s+only)?)\s+(?:"?[a-z_]+"?\.)?"?([a-z_0-9]+)"?/i.exec(
            s,
          );
        return m?.[1] ? { table: m[1], delete: verb === "delete" } : null;
      }
      default:
        return null;
    }
  }

  /** After a statement completed: bumps what it wrote, and returns it (for its transaction's end). */
  noteStatement(text: string): Written | undefined {
    const t = Changes.written(text);
    if (t !== undefined) this.bump(t);
    return t;
  }
}

const textOf = (q: unknown): string =>
  typeof q === "string"
    ? q
    : typeof (q as { text?: unknown })?.text === "string"
      ? (q as { text: string }).text
      : "";

interface Queryable {
  query(...args: unknown[]): Promise<unknown>;
}

/** A transaction's writes, bumped again at its end. */
class Pending {
  readonly tables: Written[] = [];
  constructor(private readonly changes: Changes) {}
  note(text: string): void {
    const t = this.changes.noteStatement(text);
    if (t !== undefined) this.tables.push(t);
  }
  flush(): void {
    for (const t of this.tables) this.changes.bump(t);
    this.tables.length = 0;
  }
}

async function tracked<T>(p: Promise<T>, after: () => void): Promise<T> {
  try {
    return await p;
  } finally {
    after();
  }
}

/** Wraps a method-bearing object, binding its methods to it (private fields stay reachable). */
function wrap<T extends object>(target: T, own: Record<string, unknown>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (typeof prop === "string" && prop in own) return own[prop];
      const v: unknown = Reflect.get(t, prop, t);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}

/** A PGlite client whose writes are noted (its transactions: at each statement and at the end). */
export function trackPglite<T extends Queryable & { exec(q: string, ...a: unknown[]): Promise<unknown> }>(
  client: T,
  changes: Changes,
): T {
  const txWrap = (tx: Queryable & { exec(q: string, ...a: unknown[]): Promise<unknown> }, pending: Pending) =>
    wrap(tx, {
      query: (...a: unknown[]) => tracked(tx.query(...a), () => pending.note(textOf(a[0]))),
      exec: (q: string, ...a: unknown[]) => tracked(tx.exec(q, ...a), () => pending.note(q)),
    });
  const c = client as T & { transaction<R>(cb: (tx: never) => Promise<R>): Promise<R> };
  return wrap(client, {
    query: (...a: unknown[]) => tracked(client.query(...a), () => changes.noteStatement(textOf(a[0]))),
    // a script may hold several statements: of unknown reach unless it only reads
    exec: (q: string, ...a: unknown[]) =>
      tracked(client.exec(q, ...a), () => {
        if (/;\s*\S/.test(q)) changes.bump(null);
        else changes.noteStatement(q);
      }),
    transaction: <R>(cb: (tx: never) => Promise<R>) => {
      const pending = new Pending(changes);
      return tracked(
        c.transaction((tx: never) => cb(txWrap(tx, pending) as never)),
        () => pending.flush(),
      );
    },
  });
}

/** A node-postgres pool whose writes are noted (a checked-out client's: also at commit or rollback and at release). */
export function trackPool<T extends Queryable & { connect(): Promise<unknown> }>(
  pool: T,
  changes: Changes,
): T {
  const clientWrap = (client: Queryable & { release(err?: unknown): void }) => {
    const pending = new Pending(changes);
    return wrap(client, {
      query: (...a: unknown[]) =>
        tracked(client.query(...a), () => {
          const text = textOf(a[0]);
          pending.note(text);
          if (/^\s*(commit|rollback|end)\b/i.test(text)) pending.flush();
        }),
      release: (err?: unknown) => {
        pending.flush();
        client.release(err);
      },
    });
  };
  return wrap(pool, {
    query: (...a: unknown[]) => tracked(pool.query(...a), () => changes.noteStatement(textOf(a[0]))),
    connect: async () => clientWrap((await pool.connect()) as Queryable & { release(err?: unknown): void }),
  });
}

/** A bounded map of rows read from the store, each served while the tables it came from are unchanged. */
export class Memo<K, V> {
  readonly #entries = new Map<K, { value: V; stamp: number }>();
  /** Reads going on, by key: a second miss of the same key under the same stamp waits for it. */
  readonly #loading = new Map<K, { stamp: number; value: Promise<V> }>();
  /** Reads of `getAmong` going on: a miss waits for them first, since one may answer for it. */
  readonly #loadingMany = new Set<{ stamp: number; values: Promise<unknown> }>();

  constructor(
    private readonly changes: Changes | undefined,
    private readonly tables: readonly string[],
    private readonly max = 4096,
  ) {}

  #kept(key: K, stamp: number): { value: V } | undefined {
    const hit = this.#entries.get(key);
    return hit && hit.stamp === stamp ? hit : undefined;
  }

  #keep(key: K, value: V, stamp: number): void {
    if (this.#entries.size >= this.max) this.#entries.clear();
    this.#entries.set(key, { value, stamp });
  }

  async get(key: K, load: () => Promise<V>): Promise<V> {
    if (!this.changes) return load();
    const stamp = this.changes.stamp(this.tables);
    const hit = this.#kept(key, stamp);
    if (hit) return hit.value;
    const going = this.#loading.get(key);
    if (going && going.stamp === stamp) return going.value;
    const value = load();
    const entry = { stamp, value };
    this.#loading.set(key, entry);
    try {
      const v = await value;
      this.#keep(key, v, stamp);
      return v;
    } finally {
      if (this.#loading.get(key) === entry) this.#loading.delete(key);
    }
  }

  /**
   * Like `get`, where one read answers for several keys (`load` gives each its value): all
   * are kept, under the stamp taken before the read. `absent`: the key's value when the
   * read did not give it.
   */
  async getAmong(key: K, load: () => Promise<ReadonlyMap<K, V>>, absent: V): Promise<V> {
    if (!this.changes) return (await load()).get(key) ?? absent;
    const stamp = this.changes.stamp(this.tables);
    for (;;) {
      const hit = this.#kept(key, stamp);
      if (hit) return hit.value;
      const going = [...this.#loadingMany].filter((l) => l.stamp === stamp);
      if (going.length === 0) break;
      await Promise.allSettled(going.map((l) => l.values));
      if (this.changes.stamp(this.tables) !== stamp) return this.getAmong(key, load, absent);
    }
    const values = load();
    const entry = { stamp, values };
    this.#loadingMany.add(entry);
    try {
      const got = await values;
      if (this.#entries.size + got.size >= this.max) this.#entries.clear();
      for (const [k, v] of got) this.#entries.set(k, { value: v, stamp });
      const value = got.get(key) ?? absent;
      this.#keep(key, value, stamp);
      return value;
    } finally {
      this.#loadingMany.delete(entry);
    }
  }
}
