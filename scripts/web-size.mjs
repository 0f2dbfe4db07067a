// Checks the built operator app: its files, gzipped, must stay under 500 KiB, not counting the
// terminal's own chunk (xterm.js, loaded only when the Terminal tab opens); and nothing of Node
// reached the bundle (the SDK is browser-safe: Vite would stub a Node built-in out, silently).
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

const LIMIT = 500 * 1024;
const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/web/assets");
let total = 0;
let terminal = 0;
const nodeOnly = [];
for (const name of readdirSync(dir)) {
  const bytes = readFileSync(path.join(dir, name));
  if (name.endsWith(".js") && /__vite-browser-external|from\s*["']node:/.test(bytes.toString("utf8")))
    nodeOnly.push(name);
  const size = gzipSync(bytes).length;
  if (/^TerminalTab[-.]/.test(name)) terminal += size;
  else total += size;
}
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log(`web: ${kib(total)} gzipped (limit ${kib(LIMIT)}), and the terminal's own ${kib(terminal)}`);
if (nodeOnly.length > 0) {
  console.error(`web: ${nodeOnly.join(", ")} import Node built-ins, which a browser lacks`);
  process.exit(1);
}
if (total > LIMIT) {
  console.error(`web: the app is ${kib(total)} gzipped, over ${kib(LIMIT)}: split or trim it`);
  process.exit(1);
}
