"""The artifact cache: keys, entries, probes and references, and what they digest."""
