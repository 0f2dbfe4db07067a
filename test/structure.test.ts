// The shape of src/ a newcomer can read, checked: no file of the server over 500 lines (the
// generated ones aside), and a composition root of one page. Which folder may import which is
// eslint's (eslint.config.js, the layers).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import ts from "typescript";
import { sourceFiles, SRC } from "./support/sources.js";

const linesOf = (file: string) => readFileSync(file, "utf8").split("\n").length - 1;

test("no file of src/ is over 500 lines", () => {
  const long = sourceFiles()
    .map((f) => ({ file: path.relative(SRC, f), lines: linesOf(f) }))
    .filter((f) => f.lines > 500);
  assert.deepEqual(long, []);
});

test("the composition root, src/server.ts, is under 150 lines", () => {
  const n = linesOf(path.join(SRC, "server.ts"));
  assert.ok(n < 150, `src/server.ts has ${n} lines`);
});

/**
 * Each name of src/compose/ used before it is built: an identifier (in a closure too) that
 * refers to a const or let of the same function declared further down, or to itself inside its
 * own initialiser. The root builds in order; what must climb back goes on the event bus.
 */
function usedBeforeBuilt(files: string[]): string[] {
  const program = ts.createProgram(files, { noResolve: true, noEmit: true, allowJs: false });
  const checker = program.getTypeChecker();
  const found: string[] = [];
  for (const file of files) {
    const sf = program.getSourceFile(file);
    if (!sf) continue;
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node)) {
        const value = checker.getSymbolAtLocation(node)?.valueDeclaration;
        const decl = value && ts.isVariableDeclaration(value) ? value : undefined;
        const list = decl?.parent;
        if (
          decl &&
          list &&
          ts.isVariableDeclarationList(list) &&
          list.flags & (ts.NodeFlags.Const | ts.NodeFlags.Let) &&
          decl.getSourceFile() === sf &&
          decl.name !== node &&
          node.getStart(sf) < decl.getEnd() &&
          !ts.isSourceFile(list.parent.parent)
        ) {
          const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
          found.push(`${path.relative(SRC, file)}:${line + 1} ${node.text}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found;
}

test("src/compose/ builds in order: no name is used before it is built", () => {
  const compose = sourceFiles(path.join(SRC, "compose"));
  assert.ok(compose.length > 0);
  assert.deepEqual(usedBeforeBuilt(compose), []);
});

test("the order check sees a name used in a closure before its declaration", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "warren-order-"));
  const file = path.join(dir, "root.ts");
  writeFileSync(
    file,
    [
      "export function build() {",
      "  const a = { later: () => b.x };",
      "  const c = { x: 1, self: () => c };",
      "  const b = { x: a };",
      "  return { a, b, c };",
      "}",
    ].join("\n"),
  );
  try {
    const found = usedBeforeBuilt([file]).map((f) => f.replace(/^.*root\.ts/, "root.ts"));
    assert.deepEqual(found, ["root.ts:2 b", "root.ts:3 c"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
