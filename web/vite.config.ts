// The operator app's build (into dist/web, which `warren serve` serves at /) and its dev server
// (`make dev`: Vite on 127.0.0.1:5173, proxying the API to a running server, WARREN_URL or :8080).
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const target = process.env.WARREN_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  root: here("."),
  plugins: [react()],
  resolve: { alias: { "warren/sdk": here("../src/sdk/index.ts") } },
  build: { outDir: here("../dist/web"), emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 600 },
  server: {
    host: "127.0.0.1",
    port: 5173,
    strictPort: true,
    proxy: {
      "/api": { target, ws: true, changeOrigin: false },
      "/health": target,
    },
  },
});
