import assert from "node:assert/strict";
import { test } from "node:test";
import { Redactor } from "../secrets/redact.js";
import { redactedIo } from "./redacted-io.js";

/** A follow() like the secrets service's: values are given to every follower until it stops. */
function feed() {
  const fns = new Set<(v: Buffer) => void>();
  return {
    follow: (fn: (v: Buffer) => void) => {
      fns.add(fn);
      return () => fns.delete(fn);
    },
    give: (v: string) => {
      for (const fn of fns) fn(Buffer.from(v));
    },
    get followers() {
      return fns.size;
    },
  };
}

test("a value stored mid-way is redacted from then on, split chunks included, and following stops at flush", () => {
  const f = feed();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const io = redactedIo(
    { onStdout: (c: Buffer) => out.push(c), onStderr: (c: Buffer) => err.push(c) },
    { redactor: new Redactor(["first-secret-1"], 8), follow: f.follow },
  );
  io.onStdout(Buffer.from("a first-secret-1 later-value-22 b\n"));
  f.give("later-value-22");
  io.onStdout(Buffer.from("c later-val"));
  io.onStdout(Buffer.from("ue-22 first-se"));
  io.onStdout(Buffer.from("cret-1 d\n"));
  io.onStderr(Buffer.from("later-value-22\n"));
  io.flush();
  assert.equal(f.followers, 0);
  assert.equal(Buffer.concat(out).toString(), "a [redacted] later-value-22 b\nc [redacted] [redacted] d\n");
  assert.equal(Buffer.concat(err).toString(), "[redacted]\n");
});

test("with no secret yet, a stored value is still caught", () => {
  const f = feed();
  const out: Buffer[] = [];
  const io = redactedIo(
    { onStdout: (c: Buffer) => out.push(c) },
    { redactor: Redactor.empty, follow: f.follow },
  );
  io.onStdout(Buffer.from("plain "));
  f.give("new-secret-value");
  io.onStdout(Buffer.from("new-secret-value!"));
  io.flush();
  assert.equal(Buffer.concat(out).toString(), "plain [redacted]!");
});
