"""``TunedGenerator``: the tuned pick, called where users call the model.

Rules:
- ``generate`` takes the arguments ``model.generate`` takes and resolves them as it does
  (:mod:`aitune_fp.shell.generation.hf_call`): greedy decoding runs the pick's tight loop over
  its static-cache steps (the baseline pick, and a call continuing a cache the caller
  passes, run ``model.generate`` itself: a cache is data, never refused); what greedy
  decoding cannot honour (``do_sample=True``, beams, logits processors…) is a
  ``ValueError`` naming the argument, whatever the pick; ``streamer`` is fed as by
  ``generate``; ``return_dict_in_generate=True`` returns a ``GenerateDecoderOnlyOutput``;
- calling the generator runs the pick's model forward with the caller's arguments and
  returns the model's output (its cache and ``ModelOutput`` as they are, float32 logits);
- any other attribute (``config``, ``generation_config``, ``device``…) is the model's, so the
  generator stands in for the model in a pipeline (``swap(pipe, "model", tuned)``);
- ``run`` is the tune's run record (the session's: ``None`` for a loaded generator);
- ``save`` writes a sealed folder (:mod:`aitune_fp.shell.generation.generator_save`: the
  record through the strict codec, a manifest with digests; the pick is a recipe);
  ``load(path, module=model)`` checks it and rebuilds the pick without re-tuning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from pyrsistent import pmap

from aitune_fp.core.generation import GenerationPick, GenerationResult
from aitune_fp.core.generation.saved_record import KIND, GeneratorRecord
from aitune_fp.core.record.run_record import RunRecord
from aitune_fp.effects.generation.loop import Stepper
from aitune_fp.shell.generation.candidates import BASELINE, Steppers, candidate
from aitune_fp.shell.generation.generator_save import (
    is_generator_save,
    load_record,
    save_generator,
)
from aitune_fp.shell.generation.hf_call import resolve
from aitune_fp.shell.generation.run_greedy import run_greedy

__all__ = ["TunedGenerator", "is_generator_save"]


class TunedGenerator:
    """A model with its generation pick (see the module rules)."""

    def __init__(
        self,
        model: Any,
        choice: GenerationPick,
        results: tuple[GenerationResult, ...],
        wall_s: float,
        fresh: Mapping[str, float] = pmap(),
        steppers: Steppers | None = None,
        run: RunRecord | None = None,
    ) -> None:
        self.model, self.choice, self.results, self.wall_s = model, choice, results, wall_s
        self.fresh, self.run = pmap(fresh), run
        name = choice.result.name
        self.steppers = steppers if steppers is not None else Steppers(model)
        self._stepper = None if name == BASELINE else self.steppers.get(candidate(name))
        # a stepper that runs a converted copy (bf16, static cache) forwards through it
        self._forward = getattr(self._stepper, "model", model)

    @property
    def stepper(self) -> Stepper | None:
        """The pick's stepper (``None`` when the pick is HF ``generate`` itself)."""
        return self._stepper

    @property
    def pick(self) -> GenerationResult:
        """The chosen candidate's result at the primary point."""
        return self.choice.result

    def generate(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        *,
        max_new_tokens: int | None = None,
        min_new_tokens: int | None = None,
        do_sample: bool | None = None,
        generation_config: Any = None,
        streamer: Any = None,
        **kwargs: Any,
    ) -> Any:
        """``model.generate``'s greedy decoding through the pick (see the module rules)."""
        given = {"max_new_tokens": max_new_tokens, "min_new_tokens": min_new_tokens}
        given |= {"do_sample": do_sample}
        kwargs |= {k: v for k, v in given.items() if v is not None}
        input_ids = input_ids if input_ids is not None else kwargs.pop("inputs", None)
        call = resolve(self.model, input_ids, attention_mask, generation_config, kwargs)
        if self._stepper is None or call.carries_cache:
            return self.model.generate(
                input_ids,
                attention_mask=attention_mask,
                generation_config=generation_config,
                streamer=streamer,
                **kwargs,
            )
        return run_greedy(self._stepper, call, streamer)

    @torch.inference_mode()
    def __call__(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> Any:
        """The pick's forward over the prompt: the model's output (caches included), float32
        logits."""
        out = self._forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        out.logits = out.logits.float()
        return out

    def __getattr__(self, name: str) -> Any:
        """Anything else (``config``, ``generation_config``, ``device``…) is the model's."""
        model = self.__dict__.get("model")
        if model is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(model, name)

    def record(self) -> dict[str, Any]:
        """The record as JSON-able builtins: the pick, why, every candidate's result (with
        its tokens/s), the tune wall, a fresh re-measure's figures."""
        rows = [{**asdict(r), "tokens_per_s": r.tokens_per_s} for r in self.results]
        return {
            "kind": KIND,
            "pick": self.pick.name,
            "prefill": self.pick.prefill,
            "decode": self.pick.decode,
            "reason": self.choice.reason,
            "fell_back": self.choice.fell_back,
            "results": rows,
            "tune_wall_s": self.wall_s,
            "fresh": dict(self.fresh),
        }

    def saved_record(self) -> GeneratorRecord:
        """What :meth:`save` writes: the pick, why, every result, the wall, fresh figures."""
        choice = self.choice
        first = next(r for r in self.results if r.name == choice.result.name)
        verified = choice.result if choice.result != first else None
        return GeneratorRecord(
            choice.result.name,
            choice.reason,
            choice.fell_back,
            self.results,
            self.wall_s,
            self.fresh,
            verified=verified,
        )

    def save(self, path: str | Path) -> Path:
        """Save as a sealed folder (see the module rules); returns the folder."""
        return save_generator(self.saved_record(), self.model, path)

    def with_fresh(self, figures: Mapping[str, float]) -> TunedGenerator:
        """The same pick with a fresh process's re-measured ``figures`` in its record."""
        steppers, run = self.steppers, self.run
        return type(self)(
            self.model, self.choice, self.results, self.wall_s, figures, steppers, run
        )

    def with_run(self, run: RunRecord) -> TunedGenerator:
        """The same pick with ``run`` as its tune's run record."""
        return type(self)(
            self.model, self.choice, self.results, self.wall_s, self.fresh, self.steppers, run
        )

    @classmethod
    def load_pick(cls, tuned: TunedGenerator, name: str) -> TunedGenerator:
        """The same record with candidate ``name`` as the pick (forcing a measured choice)."""
        chosen = next(r for r in tuned.results if r.name == name)
        choice = GenerationPick(chosen, f"forced: {name}", False)
        steppers = tuned.steppers  # the tune's builds serve the forced pick
        return cls(tuned.model, choice, tuned.results, tuned.wall_s, tuned.fresh, steppers)

    @classmethod
    def load(
        cls, path: str | Path, *, module: Any, expected_digest: str | None = None
    ) -> TunedGenerator:
        """Rebuild a saved pick over ``module`` without re-tuning (a ``LoadError`` when the
        save is not sealed, not this format, or ``module`` is not the model it was tuned
        from; ``expected_digest`` pins the manifest)."""
        record = load_record(path, module, expected_digest)
        return cls(module, record.choice, record.results, record.tune_wall_s, record.fresh)
