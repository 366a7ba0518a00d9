"""Timing and memory: the profiler's sweep, interleaved rounds, the call guard."""
