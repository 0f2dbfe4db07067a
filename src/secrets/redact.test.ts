import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { REDACTED, Redactor } from "./redact.js";

/** The plain reference: every occurrence of every value, overlapping ones merged, replaced once. */
function naive(text: Buffer, values: Buffer[]): Buffer {
  const mask = new Uint8Array(text.length);
  for (const v of values) {
    for (let i = text.indexOf(v); i !== -1; i = text.indexOf(v, i + 1)) mask.fill(1, i, i + v.length);
  }
  const parts: Buffer[] = [];
  let i = 0;
  while (i < text.length) {
    if (mask[i]) {
      while (i < text.length && mask[i]) i++;
      parts.push(Buffer.from(REDACTED));
    } else {
      const s = i;
      while (i < text.length && !mask[i]) i++;
      parts.push(text.subarray(s, i));
    }
  }
  return Buffer.concat(parts);
}

function chunked(r: Redactor, data: Buffer, sizes: () => number, settles = false): Buffer {
  const s = r.stream();
  const out: Buffer[] = [];
  for (let i = 0; i < data.length;) {
    const n = Math.max(1, sizes());
    out.push(s.push(data.subarray(i, i + n)));
    if (settles && Math.random() < 0.5) out.push(s.settle());
    i += n;
  }
  out.push(s.end());
  return Buffer.concat(out);
}

describe("redaction", () => {
  test("replaces each value, whole or split across chunks", () => {
    const r = new Redactor(["s3cr3t-value", "another-long-secret-value-that-is-longer-than-32-bytes!"]);
    assert.equal(r.redactText("a s3cr3t-value b"), `a ${REDACTED} b`);
    const text = Buffer.from("x s3cr3t-value y another-long-secret-value-that-is-longer-than-32-bytes! z");
    for (let cut = 1; cut < text.length; cut++) {
      const s = r.stream();
      const got = Buffer.concat([s.push(text.subarray(0, cut)), s.push(text.subarray(cut)), s.end()]);
      assert.equal(got.toString(), `x ${REDACTED} y ${REDACTED} z`, `split at ${cut}`);
    }
  });

  test("holds back only what may still be a value", () => {
    // the automaton (a value under 8 bytes): exactly the bytes that may begin one
    const a = new Redactor(["abcdefg"]).stream();
    assert.equal(a.push(Buffer.from("hello abc")).toString(), "hello ");
    assert.equal(a.push(Buffer.from("dxyz")).toString(), "abcdxyz");
    assert.equal(a.push(Buffer.from("ab")).toString(), "");
    assert.equal(a.end().toString(), "ab");
    // the skipping scan: at most the last 7 bytes, unless a long value may be under way
    const long = "ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789-end";
    const r = new Redactor(["abcdefgh", long]);
    const s = r.stream();
    assert.equal(s.push(Buffer.from("hello world, abc")).toString(), "hello wor");
    // a value found near the end waits with the bytes after it (a longer one may overlap it)
    assert.equal(s.push(Buffer.from("defgh!")).toString(), "ld, ");
    assert.equal(s.push(Buffer.from(` ${long.slice(0, 34)}`)).toString(), "[redacted]! ");
    assert.equal(s.push(Buffer.from(`${long.slice(34)}.`)).toString(), "");
    assert.equal(s.push(Buffer.from(" and more text")).toString(), "[redacted]. and mo");
    assert.equal(s.end().toString(), "re text");
  });

  test("settle lets out what no value can begin at, and keeps a tail that may be one", () => {
    // the automaton holds only what may begin a value, the skipping scan the last 7 bytes too:
    // settled, both let out the same
    for (const values of [["abcdefg"], ["abcdefgh", "ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789-end"]]) {
      const s = new Redactor(values).stream();
      const step = (text: string) => s.push(Buffer.from(text)).toString() + s.settle().toString();
      assert.equal(step("$ ls"), "$ ls", values[0]);
      assert.equal(s.holding, 0);
      assert.equal(s.settle().toString(), "");
      // "abc" may begin a value: it waits, and what follows decides
      assert.equal(step("x abc"), "x ");
      assert.equal(s.holding, 3);
      assert.equal(step(values[0]!.slice(3)), "[redacted]");
      assert.equal(step(" ab"), " ");
      assert.equal(step("x"), "abx");
      assert.equal(s.holding, 0);
    }
    // a long value begun but not gone on: let out at once
    const long = "ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789-end";
    const s = new Redactor([long]).stream();
    const out = [s.push(Buffer.from(long.slice(0, 36))), s.settle()];
    assert.equal(Buffer.concat(out).toString(), "");
    out.push(s.push(Buffer.from("!")), s.settle());
    assert.equal(Buffer.concat(out).toString(), `${long.slice(0, 36)}!`);
    assert.equal(s.push(Buffer.from(` ${long}`)).toString() + s.settle().toString(), " [redacted]");
  });

  test("nothing to redact passes the bytes as they are", () => {
    const b = Buffer.from("plain");
    assert.equal(Redactor.empty.stream().push(b), b);
    assert.equal(new Redactor(["short"], 8).size, 0);
  });

  /** The redactor's answer, whole and in chunks (random, byte by byte, settled or not), is the reference's. */
  const agreesWithReference = (r: Redactor, text: Buffer, values: Buffer[]) => {
    const want = naive(text, values).toString();
    assert.equal(r.redact(text).toString(), want, `values ${values.join(",")}`);
    assert.equal(chunked(r, text, () => Math.floor(Math.random() * 20)).toString(), want);
    assert.equal(chunked(r, text, () => 1).toString(), want);
    assert.equal(chunked(r, text, () => Math.floor(Math.random() * 20), true).toString(), want, "settled");
    assert.equal(chunked(r, text, () => 1, true).toString(), want, "settled byte by byte");
  };

  test("agrees with the plain reference on random text, values and chunks", () => {
    for (let round = 0; round < 300; round++) {
      const alphabet = "abc";
      const word = (n: number) =>
        Buffer.from(Array.from({ length: n }, () => alphabet[Math.floor(Math.random() * 3)]).join(""));
      const values = Array.from({ length: 1 + Math.floor(Math.random() * 5) }, () =>
        word(1 + Math.floor(Math.random() * (round % 2 ? 6 : 45))),
      );
      const text = word(Math.floor(Math.random() * 400));
      const r = new Redactor(values);
      agreesWithReference(r, text, values);
    }
  });

  test("the skipping scan (every value 8 bytes or more) agrees with the reference too", () => {
    for (let round = 0; round < 300; round++) {
      const alphabet = round % 3 === 0 ? "ab" : "abcdefgh";
      const word = (n: number) =>
        Buffer.from(
          Array.from({ length: n }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join(""),
        );
      const values = Array.from({ length: 1 + Math.floor(Math.random() * 6) }, () =>
        word(8 + Math.floor(Math.random() * 40)),
      );
      const filler = word(Math.floor(Math.random() * 300));
      const text = Buffer.concat([filler, values[0]!, word(5), values.at(-1)!, filler.subarray(0, 40)]);
      const r = new Redactor(values);
      assert.ok(r.skip, "the skipping scan is the one used");
      agreesWithReference(r, text, values);
    }
  });

  test("binary values and text", () => {
    const v = randomBytes(64);
    const text = Buffer.concat([randomBytes(1000), v, randomBytes(10), v]);
    const r = new Redactor([v]);
    assert.deepEqual(
      chunked(r, text, () => 7),
      naive(text, [v]),
    );
  });
});
