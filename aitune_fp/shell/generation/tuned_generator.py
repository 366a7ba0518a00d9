"""``TunedGenerator``: the tuned pick, called where users call the model.

Rules: ``generate`` takes the Hugging Face greedy arguments and runs the pick's tight greedy
loop over its static-cache steps (the baseline pick runs ``model.generate``); sampling is not
tuned and is handed to ``model.generate`` unchanged. Calling the generator runs the pick's
model forward over the prompt and returns its output (``.logits`` as the model returns them).
``save`` writes the record (the pick is a recipe); ``load(path, module=model)`` rebuilds it.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from aitune_fp.core.generation import GenerationPick, GenerationResult
from aitune_fp.effects.generation.loop import greedy, hf_generate
from aitune_fp.shell.generation.candidates import BASELINE, BY_NAME, build, phase_model


class TunedGenerator:
    """A model with its generation pick (see the module rules)."""

    def __init__(
        self,
        model: Any,
        choice: GenerationPick,
        results: tuple[GenerationResult, ...],
        wall_s: float,
    ) -> None:
        self.model, self.choice, self.results, self.wall_s = model, choice, results, wall_s
        name = choice.result.name
        self._stepper = None if name == BASELINE else build(model, BY_NAME[name])
        self._forward = model if name == BASELINE else phase_model(model, BY_NAME[name])

    @property
    def pick(self) -> GenerationResult:
        """The chosen candidate's result at the primary point."""
        return self.choice.result

    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        max_new_tokens: int = 20,
        min_new_tokens: int = 0,
        do_sample: bool = False,
        **kwargs: Any,
    ) -> torch.Tensor:
        """Greedy generation through the pick; sampling goes to ``model.generate`` untouched."""
        if do_sample or self._stepper is None:
            if not do_sample and not kwargs and min_new_tokens == max_new_tokens:
                return hf_generate(self.model, input_ids, attention_mask, max_new_tokens)
            return self.model.generate(  # type: ignore[no-any-return]
                input_ids,
                attention_mask=attention_mask,
                max_new_tokens=max_new_tokens,
                min_new_tokens=min_new_tokens,
                do_sample=do_sample,
                **kwargs,
            )
        config = self.model.generation_config
        eos = kwargs.get("eos_token_id", config.eos_token_id)
        pad = kwargs.get("pad_token_id", config.pad_token_id)
        return greedy(
            self._stepper,
            input_ids,
            attention_mask,
            max_new_tokens=max_new_tokens,
            min_new_tokens=min_new_tokens,
            eos_token_id=eos if isinstance(eos, int) else None,
            pad_token_id=pad if isinstance(pad, int) else 0,
        )

    @torch.inference_mode()
    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> Any:
        """The pick's prefill forward over the prompt: the model's output, float32 logits."""
        out = self._forward(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        out.logits = out.logits.float()
        return out

    def record(self) -> dict[str, Any]:
        """The JSON record: the pick, why, every candidate's result, the tune wall."""
        rows = [{**asdict(r), "tokens_per_s": r.tokens_per_s} for r in self.results]
        return {
            "pick": self.pick.name,
            "prefill": self.pick.prefill,
            "decode": self.pick.decode,
            "reason": self.choice.reason,
            "fell_back": self.choice.fell_back,
            "results": rows,
            "tune_wall_s": self.wall_s,
        }

    def save(self, path: str | Path) -> None:
        """Write the record as JSON (the pick is a recipe, rebuilt on ``load``)."""
        Path(path).write_text(json.dumps(self.record(), indent=2, default=str))

    @classmethod
    def load_pick(cls, tuned: TunedGenerator, name: str) -> TunedGenerator:
        """The same record with candidate ``name`` as the pick (forcing a measured choice)."""
        chosen = next(r for r in tuned.results if r.name == name)
        choice = GenerationPick(chosen, f"forced: {name}", False)
        return cls(tuned.model, choice, tuned.results, tuned.wall_s)

    @classmethod
    def load(cls, path: str | Path, *, module: Any) -> TunedGenerator:
        """Rebuild a saved pick over ``module`` without re-tuning."""
        data = json.loads(Path(path).read_text())
        fields = set(GenerationResult.__slots__)
        results = tuple(
            GenerationResult(**{k: v for k, v in row.items() if k in fields})
            for row in data["results"]
        )
        chosen = next(r for r in results if r.name == data["pick"])
        choice = GenerationPick(chosen, data["reason"], data["fell_back"])
        return cls(module, choice, results, float(data["tune_wall_s"]))
