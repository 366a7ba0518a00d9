"""Re-measure a saved generation pick in a fresh Python process, as the issue checks it.

Rules: :func:`measure_point` times one (batch, prompt) point the way the tune does: the
pick's prefill and decode steps under the tune's rules (the baseline pick: HF ``generate``),
and HF eager ``generate`` as users run it over ``HF_TOKENS`` tokens, each summarised as
tokens/s = batch × new tokens / (TTFT + (new − 1) × ITL), the strategy's metric; it also
returns the pick's greedy tokens for the prompt. :func:`fresh_measure` runs it in a new
Python (``python -m aitune_fp.shell.generation.fresh``): the child imports the factory
(``package.module:function``, importable from the working folder), calls it with ``kwargs``
after ``torch.manual_seed(seed)`` (it returns the model, or a pair whose first item is the
model, as a CLI factory may) (a seeded factory rebuilds the same weights, so an
AOTInductor package is found on disk, not compiled), loads the save with
``TunedGenerator.load(path, module=model)`` (no re-tuning) and prints the figures as one JSON
line. A child that fails is a ``RuntimeError`` carrying the end of its stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from aitune_fp.core.measure.generation_profile import tokens_per_second
from aitune_fp.effects.generation.timing import default_rule, hf_rule, time_hf, time_stepper
from aitune_fp.shell.generation.candidates import BASELINE
from aitune_fp.shell.generation.session_answer import HF_TOKENS
from aitune_fp.shell.generation.tuned_generator import TunedGenerator


@dataclass(frozen=True, slots=True)
class PointFigures:
    """The pick's and HF ``generate``'s TTFT and ITL (ms) at one point, the pick's name and
    its greedy tokens (prompt + new) for the point's prompt."""

    pick: str
    batch: int
    prompt_len: int
    new_tokens: int
    ttft_ms: float
    itl_ms: float
    hf_ttft_ms: float
    hf_itl_ms: float
    tokens: list[list[int]]

    @property
    def tokens_per_s(self) -> float:
        """The pick's tokens/s (the strategy's metric)."""
        return tokens_per_second(self.batch, self.new_tokens, self.ttft_ms, self.itl_ms)

    @property
    def hf_tokens_per_s(self) -> float:
        """HF eager ``generate``'s tokens/s, same formula."""
        return tokens_per_second(self.batch, self.new_tokens, self.hf_ttft_ms, self.hf_itl_ms)

    @property
    def speedup(self) -> float:
        """The pick's tokens/s over HF's."""
        return self.tokens_per_s / self.hf_tokens_per_s if self.hf_tokens_per_s else 0.0

    def summary(self) -> dict[str, float]:
        """The figures without the tokens: both phases' latencies and both tokens/s."""
        keys = ("ttft_ms", "itl_ms", "hf_ttft_ms", "hf_itl_ms", "tokens_per_s", "hf_tokens_per_s")
        return {k: float(getattr(self, k)) for k in keys} | {"speedup": self.speedup}


def tune_figures(tuned: TunedGenerator, batch: int, prompt_len: int) -> dict[str, float]:
    """The tune's own tokens/s of the pick and of HF ``generate`` at one point, and their
    ratio (to set beside :meth:`PointFigures.summary`)."""

    def at(name: str) -> float:
        point = (name, batch, prompt_len)
        return next(
            r for r in tuned.results if (r.name, r.batch, r.prompt_len) == point
        ).tokens_per_s

    pick, hf = at(tuned.pick.name), at(BASELINE)
    return {"tokens_per_s": pick, "hf_tokens_per_s": hf, "speedup": pick / hf if hf else 0.0}


def measure_point(tuned: TunedGenerator, input_ids: torch.Tensor, new_tokens: int) -> PointFigures:
    """The figures of ``tuned``'s pick and of HF ``generate`` at ``input_ids`` ([B, L])."""
    model, name = tuned.model, tuned.pick.name
    hf = time_hf(model, input_ids, min(new_tokens, HF_TOKENS), hf_rule())
    stepper = tuned.stepper
    if name == BASELINE or stepper is None:
        ttft, itl = hf
    else:
        ttft, itl = time_stepper(stepper, input_ids, new_tokens, default_rule())
    out = tuned.generate(input_ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens)
    batch, length = input_ids.shape
    return PointFigures(name, batch, length, new_tokens, ttft, itl, *hf, out.tolist())


def fresh_measure(
    saved: str | Path,
    factory: str,
    input_ids: torch.Tensor,
    new_tokens: int,
    *,
    kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    timeout_s: float = 1800.0,
) -> PointFigures:
    """:func:`measure_point` of the pick saved at ``saved`` in a new Python process (see the
    module rules)."""
    spec = {"factory": factory, "kwargs": kwargs or {}, "seed": seed, "new_tokens": new_tokens}
    spec |= {"saved": str(saved), "input_ids": input_ids.tolist()}
    path = [os.getcwd(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    done = subprocess.run(
        [sys.executable, "-m", __name__, json.dumps(spec)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"fresh-process measure failed: {done.stderr[-3000:]}")
    return PointFigures(**json.loads(done.stdout.strip().splitlines()[-1]))


def _child(spec: dict[str, Any]) -> PointFigures:
    module, _, function = spec["factory"].partition(":")
    torch.manual_seed(int(spec["seed"]))
    made = getattr(importlib.import_module(module), function)(**spec["kwargs"])
    model = (made[0] if isinstance(made, tuple) else made).eval()
    tuned = TunedGenerator.load(spec["saved"], module=model)
    return measure_point(tuned, torch.tensor(spec["input_ids"]), int(spec["new_tokens"]))


def main() -> None:
    """The child: one JSON argument (see :func:`fresh_measure`), one JSON line out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="JSON: saved, factory, kwargs, seed, input_ids, new_tokens")
    figures = _child(json.loads(parser.parse_args().spec))
    print(json.dumps(asdict(figures)), flush=True)


if __name__ == "__main__":
    main()
