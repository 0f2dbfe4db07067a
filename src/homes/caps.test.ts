import assert from "node:assert/strict";
import { test } from "node:test";
import { capProblem, effectiveCap } from "./caps.js";

test("the effective cap never passes the host's", () => {
  assert.equal(effectiveCap(20000, 10240), 10240);
  assert.equal(effectiveCap(100, 10240), 100);
});

test("the gate's rule: unmeasured passes, over either cap refuses with both numbers", () => {
  assert.equal(
    capProblem({ name: "a", workspaceMib: null, cap: 10 }, { name: "m", workspaceMib: null, cap: 10 }),
    null,
  );
  assert.equal(
    capProblem({ name: "a", workspaceMib: 10, cap: 10 }, { name: "m", workspaceMib: 10, cap: 10 }),
    null,
  );
  const a = capProblem({ name: "a", workspaceMib: 11, cap: 10 }, { name: "m", workspaceMib: 1, cap: 100 });
  assert.match(a ?? "", /holds 11 MiB, above the 10 MiB limit; free space/);
  const m = capProblem({ name: "a", workspaceMib: 1, cap: 10 }, { name: "m", workspaceMib: 101, cap: 100 });
  assert.match(m ?? "", /machine m's folder holds 101 MiB, above the 100 MiB limit/);
});
