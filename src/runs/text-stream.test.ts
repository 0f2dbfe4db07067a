import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TextStream } from "./text-stream.js";

const redactor = { redactText: (s: string) => s.replaceAll("hunter2-secret", "[redacted]") };

describe("a model's text as events", () => {
  it("writes one event at a time: what comes meanwhile goes out whole as the next, in order", async () => {
    const written: string[] = [];
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const stream = new TextStream(redactor, async (text) => {
      written.push(text);
      await gate;
    });
    stream.push("first ");
    for (let i = 0; i < 50; i++) stream.push(`w${i} `);
    assert.deepEqual(written, ["first "], "one write in flight, the rest waits");
    gate = Promise.resolve();
    release();
    await stream.end();
    assert.equal(written.length, 2);
    assert.equal(written.join(""), `first ${Array.from({ length: 50 }, (_, i) => `w${i} `).join("")}`);
  });

  it("redacts a secret split across pieces, and lets the last word out at the end", async () => {
    const written: string[] = [];
    const stream = new TextStream(redactor, async (text) => {
      written.push(text);
    });
    stream.push("the key is hun");
    stream.push("ter2-sec");
    stream.push("ret and done");
    await stream.end();
    const all = written.join("");
    assert.equal(all, "the key is [redacted] and done");
    assert.ok(!written.some((w) => w.includes("hunter2")));
  });

  it("never joins two steps' text: each piece names its step, a step's held word goes out when the next begins", async () => {
    const written: [string, number][] = [];
    const stream = new TextStream(redactor, async (text, step) => {
      written.push([text, step]);
    });
    stream.push("first.", 1);
    stream.push("I looked ", 2);
    stream.push("and found it", 2);
    await stream.end();
    // pieces of one step written meanwhile go out together; never with another step's
    assert.deepEqual(written[0], ["first.", 1]);
    assert.ok(written.slice(1).every(([, step]) => step === 2));
    assert.equal(
      written
        .slice(1)
        .map(([t]) => t)
        .join(""),
      "I looked and found it",
    );
  });
});
