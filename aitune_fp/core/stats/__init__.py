"""Statistics of raw samples: plain and named statistics, summaries, the seeded PRNG,
bootstrap ratio intervals and the significant-win rule built on them (all pure)."""
