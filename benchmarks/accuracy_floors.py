"""How output error moves a downstream figure: embedding retrieval recall@k against fp32.

Prints one table; no pass/fail. The floors of the default accuracy policy for outputs
without a class axis (``docs/precision.md``, :mod:`aitune_fp.core.accuracy.policy`) are
chosen from it.

The model is a config-built ``BertModel`` (random weights, no download: width 128, two
layers, four heads, vocabulary 1000); an embedding is the attention-masked mean of its last
hidden states. The corpus is ``--docs`` random token sequences of 24 tokens; each query is a
corpus document with a quarter of its tokens replaced, so every query has a near duplicate
and many close competitors. Corpus and queries are embedded by the same model (fp32, or
the perturbed one), and documents ranked by cosine similarity.

- ``recall@k``: the mean over queries of |top-k(candidate) ∩ top-k(fp32)| / k (the
  approximate-search definition: how much of fp32's answer survives);
- ``rms_rel``: ‖e' − e‖ / ‖e‖ over every embedding (what the policy's ``rms_rel_error``
  reads for such an output); ``min_row_cos``: the smallest cosine between an embedding and
  its fp32 counterpart (the policy's ``row_cosine``); ``hs_*``: the same two figures on
  the last hidden states themselves, token by token, as validation sees them for the
  real runs.

Conditions: isotropic Gaussian noise of relative RMS ε per embedding; each embedding
rounded to int8 with one scale per row (127 levels); and, where they build here, real runs
of the model: eager in bfloat16, and the project's ONNX Runtime backends in int8
(dynamic, and static calibrated on held-out-free seen rows).

    python benchmarks/accuracy_floors.py [--docs 1000] [--queries 500] [--no-real]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from returns.result import Success

Embed = Callable[[dict[str, torch.Tensor]], tuple[torch.Tensor, torch.Tensor]]
"""Batch of token ids → (mean-pooled embeddings, last hidden states)."""


def bert() -> torch.nn.Module:
    """The embedding model: a config-built BERT, random weights, eval mode."""
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=256, max_position_embeddings=64,
    )  # fmt: skip
    model: torch.nn.Module = transformers.BertModel(config)
    return model.eval()


class Hidden(torch.nn.Module):
    """The model's last hidden states as one tensor (what the backends export)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.model(input_ids=input_ids, attention_mask=attention_mask)[0]
        return out


def texts(docs: int, queries: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Corpus token ids and queries (corpus documents with a quarter of tokens replaced)."""
    gen = torch.Generator().manual_seed(7)
    corpus = torch.randint(1, 1000, (docs, 24), generator=gen)
    picked = torch.randint(0, docs, (queries,), generator=gen)
    query = corpus[picked].clone()
    swap = torch.rand(query.shape, generator=gen) < 0.25
    query[swap] = torch.randint(1, 1000, (int(swap.sum()),), generator=gen)
    return corpus, query


def embed_all(run: Callable[..., torch.Tensor], ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Mean-pooled embeddings and hidden states of ``ids`` in batches of 16, in fp32."""
    pooled, hidden = [], []
    with torch.inference_mode():
        for start in range(0, ids.shape[0], 16):
            chunk = ids[start : start + 16]
            mask = torch.ones_like(chunk)
            h = run(input_ids=chunk, attention_mask=mask).float()
            hidden.append(h)
            pooled.append(h.mean(1))
    return torch.cat(pooled), torch.cat(hidden)


def recall(ref: tuple[torch.Tensor, torch.Tensor], got: tuple[torch.Tensor, torch.Tensor],
           k: int) -> float:  # fmt: skip
    """Mean overlap of the top-k documents of each query under ``got`` and ``ref``."""

    def top(pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        docs, queries = (torch.nn.functional.normalize(t, dim=-1) for t in pair)
        return (queries @ docs.T).topk(k, -1).indices

    want, have = top(ref), top(got)
    hits = (have.unsqueeze(-1) == want.unsqueeze(-2)).any(-1).float().sum(-1)
    return float(hits.mean()) / k


def errors(ref: torch.Tensor, got: torch.Tensor) -> tuple[float, float]:
    """(RMS relative error, smallest row cosine) of ``got`` against ``ref``."""
    r, g = ref.double().reshape(-1, ref.shape[-1]), got.double().reshape(-1, ref.shape[-1])
    rms = float((g - r).norm() / r.norm())
    return rms, float(torch.nn.functional.cosine_similarity(g, r, dim=-1).min())


def noisy(eps: float) -> Callable[[torch.Tensor], torch.Tensor]:
    """Add isotropic Gaussian noise of relative RMS ``eps`` to each row."""
    gen = torch.Generator().manual_seed(11)

    def apply(e: torch.Tensor) -> torch.Tensor:
        n = torch.randn(e.shape, generator=gen)
        scale = e.norm(dim=-1, keepdim=True) / n.norm(dim=-1, keepdim=True)
        moved: torch.Tensor = e + eps * scale * n
        return moved

    return apply


def int8_rows(e: torch.Tensor) -> torch.Tensor:
    """Each row rounded to 127 levels of its own largest magnitude."""
    scale = e.abs().amax(-1, keepdim=True) / 127
    return (e / scale).round().clamp(-127, 127) * scale


def real_runners(module: torch.nn.Module, sample: dict[str, torch.Tensor]) -> dict[str, Any]:
    """Runners of the model in reduced precision (those that build here)."""
    from aitune_fp.effects.backends.ort import OnnxRuntime
    from aitune_fp.effects.inputs.samples import normalise_samples
    from aitune_fp.shell.io import perform

    wide = copy.deepcopy(module).to(torch.bfloat16)
    runners: dict[str, Any] = {"eager bfloat16": wide}
    samples = normalise_samples([{k: v[i : i + 4] for k, v in sample.items()}
                                 for i in range(0, 32, 4)])  # fmt: skip
    for precision in ("int8-dynamic", "int8-static"):
        folder = Path(tempfile.mkdtemp(prefix="floors-"))
        backend = OnnxRuntime(precision=precision)
        made = perform(backend.build(module, samples, torch.device("cpu"), folder))
        if isinstance(made, Success):
            runners[f"onnxruntime {precision}"] = made.unwrap().runner
        else:
            print(f"onnxruntime {precision}: not built: {made.failure().describe()}")
    return runners


def row(name: str, ref: dict[str, Any], got: dict[str, Any]) -> str:
    """One line of the table."""
    rms, cos = errors(ref["all"], got["all"])
    hs = errors(ref["hidden"], got["hidden"]) if "hidden" in got else None
    r1, r10 = recall(ref["pair"], got["pair"], 1), recall(ref["pair"], got["pair"], 10)
    hs_text = f"{hs[0]:9.4f} {hs[1]:9.5f}" if hs else f"{'—':>9} {'—':>9}"
    return f"{name:28} {rms:8.4f} {cos:11.5f} {hs_text} {r1:9.3f} {r10:9.3f}"


def figures(run: Callable[..., torch.Tensor], corpus: torch.Tensor,
            queries: torch.Tensor) -> dict[str, Any]:  # fmt: skip
    """Embeddings of corpus and queries, and hidden states (corpus), under ``run``."""
    docs, hidden = embed_all(run, corpus)
    asked, _ = embed_all(run, queries)
    return {"pair": (docs, asked), "all": torch.cat([docs, asked]), "hidden": hidden}


def transformed(base: dict[str, Any], fn: Callable[[torch.Tensor], torch.Tensor]) -> dict[str, Any]:
    """The fp32 figures with ``fn`` applied to every embedding (no hidden states)."""
    docs, asked = (fn(t) for t in base["pair"])
    return {"pair": (docs, asked), "all": torch.cat([docs, asked])}


def main() -> None:
    """Print the table (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--no-real", action="store_true", help="only the synthetic rows")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    module = Hidden(bert())
    corpus, queries = texts(args.docs, args.queries)
    ref = figures(module, corpus, queries)
    unit = torch.nn.functional.normalize(ref["pair"][0], dim=-1)
    pairwise = (unit @ unit.T).fill_diagonal_(float("nan"))
    print(f"fp32 embeddings: mean cosine between two documents {pairwise.nanmean():.4f} "
          f"(how little of an embedding tells documents apart)")  # fmt: skip
    print(f"{'condition':28} {'rms_rel':>8} {'min_row_cos':>11} {'hs_rms':>9} "
          f"{'hs_mincos':>9} {'recall@1':>9} {'recall@10':>9}")  # fmt: skip
    for eps in (0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1):
        print(row(f"noise eps={eps:g}", ref, transformed(ref, noisy(eps))))
    print(row("embedding int8 per row", ref, transformed(ref, int8_rows)))
    if args.no_real:
        return
    sample = {"input_ids": corpus[:32], "attention_mask": torch.ones_like(corpus[:32])}
    for name, run in real_runners(module, sample).items():
        print(row(name, ref, figures(run, corpus, queries)))


if __name__ == "__main__":
    main()
