"""Effects of generation tuning: static-cache steps, greedy loops, timing and teacher forcing."""
