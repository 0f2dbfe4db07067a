// Dollars per model call: a price table of dollars per million tokens in and out, keyed by
// `provider:model`, `model` or `provider:*`; the operator's table (WARREN_MODEL_PRICES)
// comes before the built-in one. A model with no price costs 0 and says so in the trace.
import type { ModelPriceTable as PriceTable } from "../config/index.js";

type Price = PriceTable[string];

const p = (input: number, output: number): Price => ({ input_per_mtok: input, output_per_mtok: output });

/** Public list prices (USD per million tokens); a dated model name takes its family's price. */
const BUILTIN_PRICES: PriceTable = {
  "anthropic:claude-opus-4": p(15, 75),
  "anthropic:claude-opus-4-1": p(15, 75),
  "anthropic:claude-opus-4-5": p(5, 25),
  "anthropic:claude-sonnet-4": p(3, 15),
  "anthropic:claude-sonnet-4-5": p(3, 15),
  "anthropic:claude-3-7-sonnet": p(3, 15),
  "anthropic:claude-3-5-haiku": p(0.8, 4),
  "anthropic:claude-haiku-4-5": p(1, 5),
  "openai:gpt-4o": p(2.5, 10),
  "openai:gpt-4o-mini": p(0.15, 0.6),
  "openai:gpt-4.1": p(2, 8),
  "openai:gpt-4.1-mini": p(0.4, 1.6),
  "openai:gpt-4.1-nano": p(0.1, 0.4),
  "openai:gpt-5": p(1.25, 10),
  "openai:gpt-5-mini": p(0.25, 2),
  "openai:o3": p(2, 8),
  "openai:o4-mini": p(1.1, 4.4),
  "script:*": p(0, 0),
};

export class Prices {
  readonly #tables: PriceTable[];

  constructor(overrides: PriceTable = {}) {
    this.#tables = [overrides, BUILTIN_PRICES];
  }

  /** The price of a model, or null when no table knows it. */
  lookup(provider: string, model: string): Price | null {
    for (const t of this.#tables) {
      const exact = t[`${provider}:${model}`] ?? t[model];
      if (exact) return exact;
      // the longest family name that the model's name starts with (claude-sonnet-4-5-20250929)
      let best: { len: number; price: Price } | null = null;
      for (const [key, price] of Object.entries(t)) {
        const name = key.startsWith(`${provider}:`) ? key.slice(provider.length + 1) : null;
        if (name === null || name === "*") continue;
        if (model.startsWith(`${name}-`) && (!best || name.length > best.len))
          best = { len: name.length, price };
      }
      if (best) return best.price;
      const any = t[`${provider}:*`];
      if (any) return any;
    }
    return null;
  }

  /** Dollars for a call (0 for an unpriced model). */
  usd(provider: string, model: string, tokensIn: number, tokensOut: number): number {
    const price = this.lookup(provider, model);
    if (!price) return 0;
    return (tokensIn * price.input_per_mtok + tokensOut * price.output_per_mtok) / 1_000_000;
  }
}
