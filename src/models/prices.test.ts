import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, parseConfig } from "../config/index.js";
import { Prices } from "./prices.js";

test("prices: the operator's table first, then the built-in one; families, wildcards, unknowns", () => {
  const c = parseConfig({
    WARREN_MODEL_PRICES: JSON.stringify({
      "deepseek-chat": { input_per_mtok: 0.27, output_per_mtok: 1.1 },
      "anthropic:claude-sonnet-4-5": { input_per_mtok: 1, output_per_mtok: 2 },
      "openai-compatible:*": { input_per_mtok: 0.5, output_per_mtok: 0.5 },
    }),
  });
  const p = new Prices(c.WARREN_MODEL_PRICES);
  assert.equal(p.usd("openai-compatible", "deepseek-chat", 1_000_000, 1_000_000), 0.27 + 1.1);
  // the operator's price wins, for the dated name too
  assert.equal(p.usd("anthropic", "claude-sonnet-4-5-20250929", 1_000_000, 1_000_000), 3);
  assert.equal(p.usd("openai-compatible", "llama-3", 2_000_000, 0), 1);
  assert.equal(p.usd("openai", "gpt-4o-mini", 1_000_000, 1_000_000), 0.75);
  // the longest family wins: gpt-4o-mini-2024 is gpt-4o-mini's, not gpt-4o's
  assert.equal(p.usd("openai", "gpt-4o-mini-2024-07-18", 1_000_000, 0), 0.15);
  assert.equal(new Prices().lookup("anthropic", "claude-unknown"), null);
  assert.equal(new Prices().usd("anthropic", "claude-unknown", 1000, 1000), 0);
  assert.deepEqual(parseConfig({}).WARREN_MODEL_PRICES, {});
  assert.throws(
    () => parseConfig({ WARREN_MODEL_PRICES: "{" }),
    (e: unknown) => e instanceof ConfigError && /JSON object/.test(e.message),
  );
  assert.throws(
    () => parseConfig({ WARREN_MODEL_PRICES: '{"m": {"input_per_mtok": -1, "output_per_mtok": 1}}' }),
    (e: unknown) => e instanceof ConfigError && /WARREN_MODEL_PRICES must map/.test(e.message),
  );
});
