"""Load benchmark: the served tuned model vs the served eager model vs the tuned model called
directly, on the loopback interface.

Tunes a demo model (eager baseline vs ONNX Runtime, max throughput) and saves it, or takes
an existing save (``--saved DIR --module FACTORY``). Then, one after the other, serves the
tuned model and the eager module it was tuned from, each with the same batching (from the
tune: docs/serving.md) on a local Ray with ``--num-cpus`` CPUs, and runs ``--clients``
closed-loop clients for ``--seconds`` each, every request an ``.npy`` body of ``--rows``
rows. Prints rows/s and p50/p95/p99 latency per request for the three, the mean batch the
replica ran (rows), and the served speedup against the tune's; the served speedup is *kept*
when it is at least ``(1 - margin)`` times the tune's. The direct figures are the tuned
module called in this process, one caller, at ``--rows`` rows and at the served maximum
batch. Bounded: every client stops at the deadline and Ray is shut down at the end.

    python benchmarks/serve.py [--model transformer] [--clients 32] [--seconds 10] [--rows 1]
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import torch

import aitune_fp
from aitune_fp import max_throughput, tune_module
from aitune_fp.effects.inputs.samples import make_batch
from aitune_fp.models import DEMO_MODELS
from aitune_fp.shell.io import perform
from aitune_fp.shell.serving.load import LoadResult, closed_loop
from aitune_fp.shell.serving.saved import read_saved


def _tuned_save(model: str, folder: Path) -> tuple[Path, torch.nn.Module]:
    demo = DEMO_MODELS[model]
    module = demo.build()
    tuned = perform(
        tune_module(
            module,
            demo.samples(),
            max_throughput,
            ["onnxruntime"],
            cache_dir=folder / "cache",
            max_batch_size=32,
            verify_seconds=0.0,
        )
    ).unwrap()
    return aitune_fp.save(tuned, folder / "saved"), module


def _direct(tuned: Any, rows: int, seconds: float) -> LoadResult:
    x = make_batch(tuned.samples, rows)
    latencies = []
    deadline = time.monotonic() + seconds
    start = time.monotonic()
    with torch.inference_mode():
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            x.call(tuned)
            latencies.append((time.perf_counter() - t0) * 1000.0)
    return LoadResult(tuple(latencies), 0, time.monotonic() - start, rows)


def _body(tuned: Any, rows: int) -> bytes:
    batch = make_batch(tuned.samples, rows)
    arrays = dict(zip(tuned.samples.spec.names, (t.numpy() for t in batch.flat()), strict=True))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _served(
    saved: Path, module: Any, eager: bool, body: bytes, args: argparse.Namespace
) -> dict[str, Any]:
    serving = aitune_fp.serve(
        saved,
        module,
        port=args.port,
        eager=eager,
        num_cpus=args.num_cpus,
        replica_cpus=float(args.num_cpus),
        name="bench",
    )
    try:
        url = f"{serving.url}/predict"
        closed_loop(url, body, "application/x-npz", clients=args.clients, seconds=1.0)  # warm
        before = json.loads(urllib.request.urlopen(f"{serving.url}/info", timeout=30).read())[
            "served"
        ]
        result = closed_loop(
            url,
            body,
            "application/x-npz",
            clients=args.clients,
            seconds=args.seconds,
            rows_per_request=args.rows,
        )
        after = json.loads(urllib.request.urlopen(f"{serving.url}/info", timeout=30).read())[
            "served"
        ]
    finally:
        serving.stop()
    batches = after["batches"] - before["batches"]
    rows = after["batch_rows"] - before["batch_rows"]
    return {**result.summary(), "mean_batch": rows / batches if batches else None}


def _line(label: str, figures: dict[str, Any]) -> str:
    def ms(key: str) -> str:
        value = figures.get(key)
        return f"{value:8.2f}" if isinstance(value, float) else "       —"

    batch = figures.get("mean_batch")
    shown = f"{batch:6.2f}" if isinstance(batch, float) else "     —"
    return (
        f"{label:<28} {figures['throughput']:10.1f} {ms('p50_ms')} {ms('p95_ms')} {ms('p99_ms')} "
        f"{shown} {figures['requests']:8d} {figures['errors']:6d}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="transformer", choices=sorted(DEMO_MODELS))
    parser.add_argument("--saved", default=None, help="an existing save (needs --module)")
    parser.add_argument("--module", default=None, help="FACTORY of the module it was tuned from")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rows", type=int, default=1, help="rows per request")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--num-cpus", type=int, default=2)
    parser.add_argument("--margin", type=float, default=0.5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="aitune_fp-serve-bench-"))
    if args.saved is not None:
        from aitune_fp.cli.factory import call_factory

        saved, module = Path(args.saved), call_factory(args.module)[0]
    else:
        print(f"tuning {args.model} (eager vs onnxruntime, max throughput) …", flush=True)
        saved, module = _tuned_save(args.model, work)
    tuned = aitune_fp.load(saved)
    selection = tuned.selection
    tune_speedup = (
        selection.result.metric / selection.baseline.result.metric if selection.baseline else None
    )
    body = _body(tuned, args.rows)
    figures = {
        "tuned, called directly": {
            **_direct(tuned, args.rows, min(args.seconds, 5.0)).summary(),
            "mean_batch": None,
        },
    }
    max_batch = read_saved(saved).plan.max_batch_size
    figures[f"tuned, direct, batch {max_batch}"] = {
        **_direct(tuned, max_batch, min(args.seconds, 5.0)).summary(),
        "mean_batch": None,
    }
    tuned.close()
    figures["served tuned"] = _served(saved, None, False, body, args)
    figures["served eager"] = _served(saved, module, True, body, args)
    print(
        f"{selection.backend} at batch size {selection.result.selected_batch_size}; "
        f"{args.clients} clients × {args.seconds:g} s, {args.rows} rows a request, "
        f"local Ray with {args.num_cpus} CPUs (a loaded machine: figures are indicative)"
    )
    print(
        f"{'':<28} {'rows/s':>10} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'batch':>6} "
        f"{'requests':>8} {'errors':>6}"
    )
    for label, row in figures.items():
        print(_line(label, row))
    served = figures["served tuned"]["throughput"] / max(
        figures["served eager"]["throughput"], 1e-9
    )
    if tune_speedup is not None:
        kept = served >= (1.0 - args.margin) * tune_speedup
        print(
            f"speedup over eager: tune {tune_speedup:.2f}×, served {served:.2f}× "
            f"({'kept' if kept else 'NOT kept'} within a {args.margin:.0%} margin)"
        )


if __name__ == "__main__":
    main()
