"""``demo`` and ``tune``: tune a model for real, show the result, keep the run's files.

Rules:
- ``demo`` tunes the embedded demo models (``--model``, all by default) and writes each
  run under ``OUT/<model>/``; ``tune`` tunes the module a factory returns and writes its
  run under ``OUT/``;
- every run leaves ``run.json``, ``report.md`` and ``plot.png`` (unless ``--no-plot``),
  also when tuning selected nothing, so a failed run can be read and re-selected;
- the exit code is 0 when every model got a selection, else 1 with one line naming what
  failed and why; ``--save DIR`` also saves the tuned module (``tune`` only) and prints
  its manifest digest, which ``load --expected-digest`` pins;
- ``tune --unbatched`` passes ``batched=False`` and each ``--dynamic INPUT:AXIS=MIN..MAX``
  adds to ``dynamic_axes`` (a malformed spec is a usage error, exit 2);
- ``run.json`` is written while the run goes (``status: interrupted`` once the max batch
  size is known and after each finished backend, ``complete`` at the end), so an
  interrupted run leaves a record ``report`` and ``reselect`` read; the path is printed
  when that happens, and only when this run wrote it (interrupted earlier, a file left
  by a previous run is said to be that, kept as it was);
- ``--no-isolation``, ``--build-timeout`` and ``--call-timeout`` go to the tuner as is;
- ``load DIR`` checks a saved module (``--expected-digest`` pins its manifest), loads it
  and runs it once on zeros; exit 1 with the reason when it is refused.

Longer than 260 lines: ``demo`` and ``tune`` share every step of showing and keeping a run;
apart, they would repeat them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from returns.result import Failure
from rich.console import Console

from aitune_fp.cli.console import ProgressView, show_run
from aitune_fp.cli.factory import FactoryError, call_factory, synthetic_samples
from aitune_fp.cli.generate_commands import tune_generate as tune_generate
from aitune_fp.cli.outputs import CliError, write_run
from aitune_fp.cli.precision_options import bounded, search_of
from aitune_fp.core.record.run_record import RunRecord


def _tune_one(
    module: Any,
    samples: Any,
    name: str,
    folder: Path,
    args: argparse.Namespace,
    out: Console,
    err: Console,
) -> tuple[RunRecord, Any]:
    """Tune one model with the command's options; write its files; show its table."""
    from aitune_fp.shell.io import perform

    _warn_if_uncached(args.cache_dir, err)
    record_path = folder / "run.json"
    before = record_path.stat().st_mtime_ns if record_path.is_file() else None
    try:
        with ProgressView(err, name) as view:
            effect = _tuning(module, samples, name, args, view, record_path)
    except KeyboardInterrupt:
        _say_where_the_record_is(record_path, before, err)
        raise
    result = perform(effect)
    if isinstance(result, Failure):
        raise CliError(f"{name}: {result.failure().message}")
    run = result.unwrap()
    return _write_and_show(run.record, name, folder, args, out, err), run.tuned


def _shape_options(args: argparse.Namespace) -> dict[str, Any]:
    """``run_tuning``'s keywords for ``--unbatched`` and ``--dynamic`` (none when unset)."""
    from aitune_fp.cli.options import merge_dynamic

    shapes: dict[str, Any] = {}
    if getattr(args, "unbatched", False):
        shapes["batched"] = False
    if getattr(args, "dynamic", None):
        shapes["dynamic_axes"] = merge_dynamic(args.dynamic)
    return shapes


def _tuning(
    module: Any, samples: Any, name: str, args: argparse.Namespace, view: Any, record_path: Path
) -> Any:
    """The tuning run of ``module`` with the command's options, as an effect."""
    from aitune_fp.effects.isolation import Timeouts
    from aitune_fp.shell.tune_module import TuneOptions, run_tuning

    timeouts = Timeouts(build=args.build_timeout, call=args.call_timeout)
    shaped = {**_run_options(args), **_shape_options(args), **search_of(args)}
    options = TuneOptions(
        device=args.device,
        cache_dir=args.cache_dir,
        model_name=name,
        progress=view,
        record_path=record_path,
        timeouts=timeouts,
        **shaped,
    )
    backends = list(args.backends) if args.backends else None
    return run_tuning(module, samples, bounded(args.strategy, args), backends, options)


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The command's plain run options as ``run_tuning``'s keywords: the batch-size bound,
    isolation, the verification and the reuse of earlier runs (absent on ``demo``: off)."""
    return {
        "max_batch_size": args.max_batch_size,
        "isolation": not args.no_isolation,
        "verify_seconds": getattr(args, "verify_seconds", None) or None,
        "reuse_baseline": getattr(args, "reuse_baseline", None),
        "fresh": getattr(args, "fresh", False),
    }


def _say_where_the_record_is(record_path: Path, before: int | None, err: Console) -> None:
    """On an interrupt: the partial record's path when this run wrote it, else that the
    file there is a previous run's."""
    now = record_path.stat().st_mtime_ns if record_path.is_file() else None
    if now is not None and now != before:
        err.print(f"partial run record: {record_path}", markup=False, highlight=False)
    elif now is not None:
        err.print(
            f"no run record written yet; {record_path} is a previous run's, kept",
            markup=False,
            highlight=False,
        )


def _write_and_show(
    record: RunRecord,
    name: str,
    folder: Path,
    args: argparse.Namespace,
    out: Console,
    err: Console,
) -> RunRecord:
    """Write the run's files, show its table, say where the baseline came from; the
    record as written (its wall account with the plot's stage)."""
    try:
        record, written = write_run(record, folder, err, plot=not args.no_plot, recorded=True)
    except OSError as error:
        raise CliError(
            f"{name}: cannot write the run's files in {folder}: {error.strerror or error} "
            "(files already there are kept whole)"
        ) from None
    show_run(out, record)
    _baseline_note(record, err)
    err.print("wrote " + ", ".join(str(p) for p in written), markup=False, highlight=False)
    return record


def _baseline_note(record: RunRecord, err: Console) -> None:
    """Say where a reused baseline came from, or why a reuse asked for was refused."""
    origin = record.provenance
    if origin.baseline_refused:
        err.print(f"warning: {origin.baseline_refused}", markup=False, highlight=False)
    elif origin.baseline_reused_from:
        line = f"eager baseline reused from {origin.baseline_reused_from} (not profiled again)"
        err.print(line, markup=False, highlight=False)


def _warn_if_uncached(cache_dir: str | None, err: Console) -> None:
    """Say so when the artifact cache cannot be written (the run goes on uncached)."""
    from aitune_fp.effects.cache.artifact_cache import unusable_reason
    from aitune_fp.shell.resolve import default_cache_dir

    problem = unusable_reason(Path(cache_dir) if cache_dir else default_cache_dir())
    if problem is not None:
        err.print(
            f"warning: artifact cache off for this run ({problem}): running uncached",
            markup=False,
            highlight=False,
        )


def _failed(name: str, record: RunRecord) -> str | None:
    if record.selection is not None:
        return None
    return f"{name}: {record.error.message if record.error else 'no backend was selected'}"


def demo(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Tune the embedded demo models on the chosen device with every available backend."""
    from aitune_fp.models import DEMO_MODELS

    names = list(DEMO_MODELS) if args.model == "all" else [args.model]
    problems = [p for name in names if (p := _demo_one(DEMO_MODELS[name], name, args, out, err))]
    if problems:
        raise CliError("; ".join(problems))
    return 0


def _demo_one(
    model: Any, name: str, args: argparse.Namespace, out: Console, err: Console
) -> str | None:
    """Tune one demo model under ``OUT/<name>``; what failed, or ``None``."""
    try:
        record, tuned = _tune_one(
            model.build(), model.samples(), name, Path(args.out) / name, args, out, err
        )
    except CliError as error:
        return str(error)
    if tuned is not None:
        tuned.close()
    return _failed(name, record)


def tune(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Tune the module a user's factory returns."""
    module, samples = _built(args)
    name = args.name or args.factory.rpartition(":")[2]
    record, tuned = _tune_one(module, samples, name, Path(args.out), args, out, err)
    try:
        problem = _failed(name, record)
        if problem:
            raise CliError(problem)
        if args.save is not None and tuned is not None:
            _save(tuned, args.save, err)
    finally:
        if tuned is not None:
            tuned.close()
    return 0


def _built(args: argparse.Namespace) -> tuple[Any, Any]:
    """The module the factory returns and its samples (synthetic from ``--input-shape``
    and ``--dtype`` when it returns none); a failing factory is a :class:`CliError`."""
    try:
        module, samples = call_factory(args.factory)
        if samples is None:
            samples = synthetic_samples(args.input_shape or [], args.dtype or [])
    except FactoryError as error:
        raise CliError(str(error)) from None
    return module, samples


def _save(tuned: Any, folder: str, err: Console) -> None:
    """Save the tuned module to ``folder`` and print its manifest digest."""
    from aitune_fp.shell.persist import manifest_digest, save

    saved = save(tuned, folder)
    err.print(
        f"saved the tuned module to {saved} (manifest {manifest_digest(saved)})",
        markup=False,
        highlight=False,
    )


def load(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Check and load a saved tuned module, then run it once on zeros."""
    from aitune_fp.shell.persist import LoadError
    from aitune_fp.shell.persist import load as load_saved

    try:
        tuned = load_saved(args.saved, device=args.device, expected_digest=args.expected_digest)
    except LoadError as error:
        raise CliError(str(error)) from None
    try:
        _run_once(tuned, args.saved, out)
    finally:
        tuned.close()
    return 0


def _run_once(tuned: Any, saved: str, out: Console) -> None:
    """Run the loaded module once on a batch of one and say so with its manifest digest."""
    import torch

    from aitune_fp.effects.inputs.samples import make_batch
    from aitune_fp.shell.persist import manifest_digest

    with torch.inference_mode():
        make_batch(tuned.samples, 1).call(tuned)
    line = f"{saved}: {tuned.backend} loaded and ran"
    out.print(f"{line} (manifest {manifest_digest(saved)})", markup=False, highlight=False)
