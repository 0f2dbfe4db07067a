import assert from "node:assert/strict";
import { test } from "node:test";
import { homeFile, homeFolder, httpMethod, httpUrl, normalisePercent, pathUnder } from "./canonical.js";
import { underBase } from "./http.js";
import { ToolFailure } from "./impl.js";

const ID = "agt_0123";

test("home files: every spelling of one file is one path; leaving the home is refused", () => {
  const file = homeFile(ID);
  for (const spelling of [
    "secrets/key.txt",
    "./secrets/key.txt",
    `/home/${ID}/secrets/key.txt`,
    `/home/${ID}//secrets/./key.txt`,
    "notes/../secrets/key.txt",
    "secrets//key.txt",
    "secrets/key.txt/",
    "./notes/./../secrets/x/../key.txt",
  ])
    assert.equal(file(spelling, "path"), "secrets/key.txt", spelling);
  for (const [spelling, why] of [
    ["../x", /leaves \/home\/agt_0123/],
    ["notes/../../x", /leaves/],
    ["/etc/passwd", /must be inside \/home\/agt_0123/],
    ["/home/agt_other/secrets/key.txt", /must be inside/],
    ["//home/agt_0123/x", /must be inside/],
    ["secrets/key\0.txt", /NUL/],
    [".", /itself/],
    [`/home/${ID}`, /itself/],
    ["", /empty/],
  ] as const)
    assert.throws(
      () => file(spelling, "path"),
      (e: unknown) => e instanceof ToolFailure && why.test(e.message),
      spelling,
    );
  assert.throws(() => file(7, "path"), /"path" must be a string/);
  assert.throws(() => file(undefined, "path"), /"path" is required/);
  // canonical forms are their own canonical form
  assert.equal(file("a b/ü.txt", "path"), "a b/ü.txt");
});

test("home folders: the home itself is `.`", () => {
  const folder = homeFolder(ID);
  for (const home of [undefined, null, "", ".", "./", `/home/${ID}`, `/home/${ID}/`, "notes/..", "a/b/../.."])
    assert.equal(folder(home, "path"), ".", String(home));
  assert.equal(folder("notes/../secrets//", "path"), "secrets");
  assert.equal(folder(`/home/${ID}/a/./b`, "path"), "a/b");
  assert.throws(() => folder("..", "path"), ToolFailure);
  assert.throws(() => folder("/home/agt_other", "path"), ToolFailure);
});

test("percent-encoding: unreserved characters decoded, other escapes in upper case", () => {
  assert.equal(normalisePercent("%61%64min%2fx%7e%2E%2d%5F%3a%20"), "admin%2Fx~.-_%3A%20");
  assert.equal(normalisePercent("100%"), "100%");
});

test("URLs: scheme and host lower case, default port, dot segments, percent-encoding, fragment", () => {
  const want = "https://example.com/a/b?q=1";
  for (const spelling of [
    "https://example.com/a/b?q=1",
    "HTTPS://EXAMPLE.com:443/a/b?q=1",
    "https://Example.COM./a/./x/../b?q=1#frag",
    "https://example.com/%61/%62?q=%31",
    "https://example.com/a/%2e%2E/a/b?q=1",
    "https://example.com/x/y/../../a/b?q=1",
  ])
    assert.equal(httpUrl(spelling, "url"), want, spelling);
  assert.equal(httpUrl("http://example.com:80/", "url"), "http://example.com/");
  assert.equal(httpUrl("http://example.com:8080", "url"), "http://example.com:8080/");
  assert.equal(httpUrl("http://0x7f.1/", "url"), "http://127.0.0.1/");
  assert.equal(httpUrl("https://example.com/a%2fb", "url"), "https://example.com/a%2Fb");
  assert.throws(() => httpUrl("file:///etc/passwd", "url"), /only http and https/);
  assert.throws(() => httpUrl("not a url", "url"), /not a valid URL/);
  for (const u of [want, "https://example.com/a%2Fb%20c?x=%2F#", "http://[::1]:80/x"]) {
    const once = httpUrl(u, "url")!;
    assert.equal(httpUrl(once, "url"), once, u);
  }
});

test("methods: upper case", () => {
  assert.equal(httpMethod("get", "method"), "GET");
  assert.equal(httpMethod("Post", "method"), "POST");
  assert.throws(() => httpMethod(1, "method"), ToolFailure);
});

test("http paths: resolved under the base as the tool sends them, relative to it", () => {
  const base = new URL("https://api.example.com/v1/");
  const resolve = (b: URL, p: string) => underBase(b, p, undefined);
  const under = pathUnder(base, resolve);
  for (const spelling of ["items/7", "/items/7", "./items/7", "x/../items/7", "%69tems/7"])
    assert.equal(under(spelling, "path"), "items/7", spelling);
  assert.equal(under("items/7?Page=%32&a=%2f", "path"), "items/7?Page=2&a=%2F");
  assert.equal(under("a%2fb", "path"), "a%2Fb");
  assert.equal(under("./users:1", "path"), "./users:1");
  assert.equal(under("", "path"), "");
  assert.throws(() => under("../admin", "path"), /leaves the tool's base URL/);
  assert.throws(() => under("%2e%2e/admin", "path"), /leaves/);
  assert.throws(() => under("https://evil.example/", "path"), /not a URL/);
  // what is decided is what is sent: the canonical path resolves to the same URL, and is its own canonical form
  for (const raw of ["x/../items/7?q=1", "%69tems", "./users:1", "a/./b/", "", "a%2fb?x=%7e"]) {
    const c = under(raw, "path")!;
    const sent = resolve(base, c).href;
    assert.equal(sent, httpUrl(sent, "url"), raw);
    assert.equal(sent, httpUrl(resolve(base, raw).href, "url"), raw);
    assert.equal(under(c, "path"), c, raw);
  }
});
