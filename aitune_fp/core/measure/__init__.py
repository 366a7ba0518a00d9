"""What to measure and when to stop: pure decisions about how long to time a backend (see
each module): the per-call and sweep stop rules, warm-up, early stop and the re-measured
first point, the plan of the interleaved final rounds and the decisions taken about them
(who joins, when they stop). The timing itself is in :mod:`aitune_fp.effects`."""
