import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./src/store/schema.ts",
  out: process.env.DRIZZLE_OUT ?? "./drizzle",
});
