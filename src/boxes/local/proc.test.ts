import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseStartTime } from "./proc.js";

describe("pid start time", () => {
  it("reads field 22 even when the command name has spaces and parentheses", () => {
    const stat =
      "1234 (we ird) (name)) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100";
    assert.equal(parseStartTime(stat), "987654");
    assert.equal(parseStartTime("garbage"), null);
  });
});
