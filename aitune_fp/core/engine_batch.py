"""The batch size an engine's optimisation profile is tuned for, from what the strategy
judges.

Rule: TensorRT (and Torch-TensorRT) pick their tactics for the profile's ``opt`` shape and
run every other batch size of the profile with them; so a strategy judging latency gets
engines tuned at batch 1 (its latency is judged at the small batches a latency-bound caller
sends, batch 1 for the shipped ones), every other strategy (throughput, and anything it
does not know) at the largest batch of the sweep, where throughput peaks. A config whose
``opt_batch_size`` the user set keeps it.
"""

from __future__ import annotations


def engine_opt_batch(metric_label: str, largest: int) -> int:
    """The optimisation batch size for a strategy whose metric is ``metric_label``.

    >>> engine_opt_batch("latency", 4096), engine_opt_batch("throughput", 4096)
    (1, 4096)
    >>> engine_opt_batch("memory", 64)
    64
    """
    return 1 if metric_label == "latency" else largest
