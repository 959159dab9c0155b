//! Cost of tokens: a built-in price table, overridable per model in `baton.toml`.

use std::collections::BTreeMap;

use baton_config::Price;

use crate::model::Usage;

/// Built-in prices in USD per million tokens: (model prefix, input, output, cache read, cache write).
const DEFAULT_PRICES: &[(&str, f64, f64, f64, f64)] = &[
    ("claude-opus-4-5", 5.0, 25.0, 0.50, 6.25),
    ("claude-opus-4-6", 5.0, 25.0, 0.50, 6.25),
    ("claude-opus-4", 15.0, 75.0, 1.50, 18.75),
    ("claude-sonnet-4", 3.0, 15.0, 0.30, 3.75),
    ("claude-3-7-sonnet", 3.0, 15.0, 0.30, 3.75),
    ("claude-haiku-4", 1.0, 5.0, 0.10, 1.25),
    ("claude-3-5-haiku", 0.8, 4.0, 0.08, 1.0),
    ("gpt-4o-mini", 0.15, 0.60, 0.075, 0.0),
    ("gpt-4o", 2.50, 10.0, 1.25, 0.0),
    ("gpt-4.1-mini", 0.40, 1.60, 0.10, 0.0),
    ("gpt-4.1", 2.0, 8.0, 0.50, 0.0),
    ("gpt-5-mini", 0.25, 2.0, 0.025, 0.0),
    ("gpt-5", 1.25, 10.0, 0.125, 0.0),
    // Served on the Responses API (openai-responses); gpt-5-codex is priced as gpt-5.
    // The pro models have no cached-input discount.
    ("gpt-5-pro", 15.0, 120.0, 15.0, 0.0),
    ("o3-pro", 20.0, 80.0, 20.0, 0.0),
    ("o3", 2.0, 8.0, 0.50, 0.0),
    ("o4-mini", 1.10, 4.40, 0.275, 0.0),
    ("codex-mini", 1.50, 6.0, 0.375, 0.0),
];

/// Prices by model name or prefix; the longest matching prefix wins.
#[derive(Debug, Clone)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The built-in table with `overrides` (from `baton.toml`) on top.
    pub fn new(overrides: &BTreeMap<String, Price>) -> Self {
        let mut prices: BTreeMap<String, Price> = DEFAULT_PRICES
            .iter()
            .map(|&(m, input, output, cache_read, cache_write)| {
                (
                    m.to_string(),
                    Price {
                        input,
                        output,
                        cache_read,
                        cache_write,
                    },
                )
            })
            .collect();
        prices.extend(overrides.iter().map(|(k, v)| (k.clone(), *v)));
        Self { prices }
    }

    /// The price for `model`, if the table knows it.
    pub fn lookup(&self, model: &str) -> Option<Price> {
        self.prices
            .iter()
            .filter(|(prefix, _)| model.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, p)| *p)
    }

    /// Cost in USD of `usage` on `model`; 0 when the model has no price.
    pub fn cost(&self, model: &str, usage: &Usage) -> f64 {
        self.lookup(model).map_or(0.0, |p| {
            (usage.input_tokens as f64 * p.input
                + usage.output_tokens as f64 * p.output
                + usage.cache_read_tokens as f64 * p.cache_read
                + usage.cache_write_tokens as f64 * p.cache_write)
                / 1_000_000.0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        let t = PriceTable::new(&BTreeMap::new());
        assert_eq!(
            t.lookup("claude-opus-4-5-20251101").map(|p| p.input),
            Some(5.0)
        );
        assert_eq!(t.lookup("claude-opus-4-1").map(|p| p.input), Some(15.0));
        assert_eq!(t.lookup("gpt-4o-mini-2024").map(|p| p.input), Some(0.15));
        assert_eq!(t.lookup("llama3"), None);
        // Responses-API models.
        assert_eq!(t.lookup("gpt-5-codex").map(|p| p.input), Some(1.25));
        assert_eq!(t.lookup("gpt-5-pro").map(|p| p.output), Some(120.0));
        assert_eq!(t.lookup("o3-2025-04-16").map(|p| p.cache_read), Some(0.50));
        assert_eq!(t.lookup("o3-pro").map(|p| p.input), Some(20.0));
        assert_eq!(t.lookup("codex-mini-latest").map(|p| p.input), Some(1.50));
    }

    #[test]
    fn overrides_and_cost() {
        let mut o = BTreeMap::new();
        o.insert(
            "llama3".to_string(),
            Price {
                input: 1.0,
                output: 2.0,
                cache_read: 0.5,
                cache_write: 4.0,
            },
        );
        let t = PriceTable::new(&o);
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 250_000,
        };
        assert!((t.cost("llama3:8b", &u) - (1.0 + 1.0 + 1.0 + 1.0)).abs() < 1e-9);
        assert_eq!(t.cost("unknown", &u), 0.0);
    }
}
