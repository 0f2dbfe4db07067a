import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SHARED_GID, groupText, passwdText, usersFromHomes } from "./users.js";

describe("box users", () => {
  const homes = [
    { name: "a2", uid: 10001, gid: 10001, isDirectory: true },
    { name: "a1", uid: 10000, gid: 10000, isDirectory: true },
    { name: "stray", uid: 0, gid: 0, isDirectory: true },
    { name: "file", uid: 10002, gid: 10002, isDirectory: false },
    { name: "bad name", uid: 10003, gid: 10003, isDirectory: true },
  ];

  it("reads agents from homes owned by agent uids", () => {
    const { users, shared } = usersFromHomes(homes);
    assert.deepEqual(users, [
      { name: "a1", uid: 10000, gid: 10000 },
      { name: "a2", uid: 10001, gid: 10001 },
    ]);
    assert.equal(shared, false);
    assert.equal(
      usersFromHomes([{ name: "a1", uid: 10000, gid: SHARED_GID, isDirectory: true }]).shared,
      true,
    );
  });

  it("writes passwd and group lines", () => {
    const { users } = usersFromHomes(homes);
    const passwd = passwdText(users);
    assert.match(passwd, /^root:x:0:0:/);
    assert.match(passwd, /\na1:x:10000:10000:agent a1:\/home\/a1:\/bin\/bash\n/);
    const group = groupText(users, true);
    assert.match(group, /\na2:x:10001:\n/);
    assert.match(group, new RegExp(`\\nagents:x:${SHARED_GID}:a1,a2\\n$`));
    assert.doesNotMatch(groupText(users, false), /agents:/);
    assert.throws(() => passwdText([{ name: "x:0:0", uid: 10000, gid: 10000 }]));
  });
});
