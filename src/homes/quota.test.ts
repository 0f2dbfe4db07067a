import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { quotaSupport } from "./quota.js";

const table = [
  "26 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard",
  "40 26 254:1 / /srv/state rw,relatime - xfs /dev/vdb rw,attr2,inode64,prjquota",
  "41 26 254:2 / /srv/with\\040space rw - ext4 /dev/vdc rw,prjquota",
  "42 26 0:30 / /srv/state/tmp rw - tmpfs tmpfs rw,size=1024k",
].join("\n");

describe("quotaSupport", () => {
  it("reads the mount holding the folder, the longest mount point above it", () => {
    assert.deepEqual(
      { ...quotaSupport("/srv/state/workspaces", table), detail: "" },
      { mount: "/srv/state", fs: "xfs", project: true, detail: "" },
    );
    assert.equal(quotaSupport("/srv/state/tmp/x", table).fs, "tmpfs");
    assert.equal(quotaSupport("/srv/state/tmp/x", table).project, false);
    assert.equal(quotaSupport("/srv/with space/h", table).project, true);
  });

  it("an ext4 root without prjquota has none, and says the watcher holds the caps", () => {
    const q = quotaSupport("/home/x", table);
    assert.equal(q.mount, "/");
    assert.equal(q.project, false);
    assert.match(q.detail, /no project quota .* the disk watcher holds the caps/);
  });

  it("answers for this host without throwing", () => {
    const q = quotaSupport(process.cwd());
    assert.equal(typeof q.project, "boolean");
  });
});
