import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isWarrenError } from "../errors.js";
import { checkComponents, parseHomePath } from "./paths.js";

const AGENT = "ag_123";

function refused(fn: () => unknown, code: string): void {
  assert.throws(fn, (err: unknown) => isWarrenError(err) && err.code === code);
}

describe("parseHomePath", () => {
  it("accepts /home/<agent id>/... and relative paths alike", () => {
    assert.deepEqual(parseHomePath(AGENT, `/home/${AGENT}/notes/a.txt`), ["notes", "a.txt"]);
    assert.deepEqual(parseHomePath(AGENT, "notes/a.txt"), ["notes", "a.txt"]);
  });

  it("handles . and .. and repeated slashes lexically", () => {
    assert.deepEqual(parseHomePath(AGENT, "./a//b/./c"), ["a", "b", "c"]);
    assert.deepEqual(parseHomePath(AGENT, "a/b/../c"), ["a", "c"]);
    assert.deepEqual(parseHomePath(AGENT, `/home/${AGENT}/a/../b/`), ["b"]);
    assert.deepEqual(parseHomePath(AGENT, "a/..b/c.."), ["a", "..b", "c.."]);
  });

  it("refuses an empty path and a NUL", () => {
    refused(() => parseHomePath(AGENT, ""), "file.invalid_path");
    refused(() => parseHomePath(AGENT, "a\0b"), "file.invalid_path");
  });

  it("refuses .. that leaves the home, even when a later step comes back", () => {
    refused(() => parseHomePath(AGENT, ".."), "file.invalid_path");
    refused(() => parseHomePath(AGENT, "../x"), "file.invalid_path");
    refused(() => parseHomePath(AGENT, "a/../../x"), "file.invalid_path");
    refused(() => parseHomePath(AGENT, `../${AGENT}/x`), "file.invalid_path");
    refused(() => parseHomePath(AGENT, `/home/${AGENT}/../${AGENT}/x`), "file.invalid_path");
  });

  it("refuses absolute paths outside the agent's home", () => {
    refused(() => parseHomePath(AGENT, "/etc/passwd"), "file.invalid_path");
    refused(() => parseHomePath(AGENT, "/home/other/x"), "file.invalid_path");
    refused(() => parseHomePath(AGENT, `/home/${AGENT}x/y`), "file.invalid_path");
    refused(() => parseHomePath(AGENT, `//home/${AGENT}/y`), "file.invalid_path");
    refused(() => parseHomePath(AGENT, `/./home/${AGENT}/y`), "file.invalid_path");
  });

  it("refuses a path that names the home itself", () => {
    refused(() => parseHomePath(AGENT, `/home/${AGENT}`), "file.invalid_path");
    refused(() => parseHomePath(AGENT, `/home/${AGENT}/`), "file.invalid_path");
    refused(() => parseHomePath(AGENT, "."), "file.invalid_path");
    refused(() => parseHomePath(AGENT, "a/.."), "file.invalid_path");
  });

  it("refuses a malformed agent id as a programming error", () => {
    assert.throws(
      () => parseHomePath("a/b", "x"),
      (err: unknown) => !isWarrenError(err),
    );
    assert.throws(
      () => parseHomePath("", "x"),
      (err: unknown) => !isWarrenError(err),
    );
  });
});

describe("checkComponents", () => {
  it("accepts plain names and refuses anything else", () => {
    checkComponents(["a", "b.txt"]);
    for (const bad of [[], [""], ["."], [".."], ["a/b"], ["a\0"]])
      refused(() => checkComponents(bad), "file.invalid_path");
  });
});
