import assert from "node:assert/strict";
import { test } from "node:test";
import { onlyOrgs } from "./app.js";

test("/metrics keeps the server's series and only the caller's organisations' ones", () => {
  const text = [
    "# HELP warren_box_pids Processes",
    "# TYPE warren_box_pids gauge",
    'warren_box_pids{machine="mch_a",org="org_a"} 3',
    'warren_box_pids{machine="mch_b",org="org_b"} 4',
    'warren_box_runaways_total{machine="mch_b",org="org_b",limit="pids"} 1',
    'warren_box_runaways_total{limit="pids",org="org_a",machine="mch_a"} 2',
    'warren_orphan{machine="mch_c"} 1',
    'warren_http_requests_total{method="GET",route="/metrics",status="200"} 9',
    'warren_tricky{route="x,org=\\"org_a\\"",machine="mch_b",org="org_b"} 1',
    "warren_execs 5",
    "",
  ].join("\n");
  const kept = onlyOrgs(text, new Set(["org_a"]));
  assert.equal(
    kept,
    [
      "# HELP warren_box_pids Processes",
      "# TYPE warren_box_pids gauge",
      'warren_box_pids{machine="mch_a",org="org_a"} 3',
      'warren_box_runaways_total{limit="pids",org="org_a",machine="mch_a"} 2',
      'warren_http_requests_total{method="GET",route="/metrics",status="200"} 9',
      "warren_execs 5",
      "",
    ].join("\n"),
  );
  assert.doesNotMatch(onlyOrgs(text, new Set()), /org=|machine=/);
});
