"""Steps of scripts/gpu-check.sh that need Python (the summary: scripts/gpu_summary.py).

    python scripts/gpu_check.py cuda        # exit 3 and "no CUDA device: ..." without one
    python scripts/gpu_check.py providers   # ONNX Runtime GPU providers really used (or SKIP)
    python scripts/gpu_check.py backends    # the tuner's variant configs (scripts/gpu_cases.py)
    python scripts/gpu_check.py memory      # the CUDA memory probe, input pool excluded
    python scripts/gpu_check.py gpu-tests   # the gpu tests' files, a PASS only when one ran
    python scripts/gpu_check.py overhead    # TunedModule's per-call overhead on CUDA

Every item line is ``STATUS name: detail`` with STATUS PASS, FAIL or SKIP (a SKIP says why
and is never a PASS). A step exits 1 when an item failed, 3 (SKIP) when nothing ran, and
0 when something passed and nothing failed. ``backends`` runs its cases cheap ones first
(the core ones: each precision at least once for each compiler, on a conv model and on a
transformer; then the ``wide`` search's other configs) while ``GPU_CHECK_STEP_S`` (the
step's seconds) lasts, each case capped at what is left of it: every case on a float32
model, judged through the float32 eager reference and the accuracy policy, as a tune judges
it (scripts/gpu_cases.py). ``gpu-tests`` collects only the test files that hold ``gpu``
tests and leaves out the ``heavy`` ones (a fleet tune: the demo step runs a tune).
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/gpu_cases.py
NO_CUDA = 3
SKIPPED = 3
MIB = 1024 * 1024
STATUSES = ("PASS", "FAIL", "SKIP")
CASE_S = 90.0
"""The most seconds one case may take (a compile included) before it is a hung FAIL; never
more than what is left of its step."""
MIN_CASE_S = 10.0
"""A case is started only with at least this many seconds of its step left."""
LAST_LINES_S = 5.0
"""The backends step's last seconds, kept for its closing items."""
SWITCHES = ("strict", "tf32")
"""torch's float32 switches a case runs under (scripts/gpu_cases.py)."""


def step_left(default_s: float, now: Callable[[], float] = time.time) -> float:
    """Seconds left until the step's end: ``GPU_CHECK_STEP_END`` (an epoch second, when
    gpu-check.sh's ``timeout`` sends TERM) when set, else ``GPU_CHECK_STEP_S`` counted from
    now, else ``default_s``.

    >>> os.environ["GPU_CHECK_STEP_END"] = "1000"
    >>> step_left(60.0, lambda: 990.0)
    10.0
    >>> del os.environ["GPU_CHECK_STEP_END"]
    """
    end = os.environ.get("GPU_CHECK_STEP_END")
    if end is not None:
        return float(end) - now()
    return float(os.environ.get("GPU_CHECK_STEP_S", default_s))


class Items:
    """The item lines of one step, printed as they come; the step's exit code at the end."""

    def __init__(self) -> None:
        self.statuses: list[str] = []

    def say(self, status: str, name: str, detail: str) -> None:
        """Print ``STATUS name: detail`` and remember the status."""
        assert status in STATUSES
        self.statuses.append(status)
        print(f"{status} {name}: {detail}", flush=True)

    def code(self) -> int:
        """1 on a FAIL, 3 when nothing passed, else 0."""
        return step_code(self.statuses)


def step_code(statuses: Sequence[str]) -> int:
    """A step's exit code from its items: 1 on a FAIL, SKIPPED when none passed, else 0."""
    if "FAIL" in statuses:
        return 1
    return 0 if "PASS" in statuses else SKIPPED


def gpu_hardware(dev: Path = Path("/dev")) -> str | None:
    """What says this machine has an NVIDIA GPU (a ``/dev/nvidia<N>`` device node, or
    ``nvidia-smi`` on the PATH), or None."""
    import shutil

    nodes = sorted(p.name for p in dev.glob("nvidia[0-9]*"))
    if nodes:
        return f"{dev}/{nodes[0]} exists"
    smi = shutil.which("nvidia-smi")
    return f"{smi} exists" if smi else None


def cuda(hardware: Callable[[], str | None] = gpu_hardware) -> int:
    """PASS with the device name; without a usable CUDA device a FAIL where the machine
    has an NVIDIA GPU (torch cannot use it: a CPU build, or no device visible), else exit
    ``NO_CUDA`` saying why there is none."""
    if not torch.cuda.is_available():
        why = "torch is a CPU-only build" if torch.version.cuda is None else "no device visible"
        found = hardware()
        if found is not None:
            print(f"FAIL cuda: this machine has an NVIDIA GPU ({found}) but torch cannot use "
                  f"it: {why} (torch {torch.__version__} at {torch.__file__})")  # fmt: skip
            return 1
        print(f"SKIP cuda: no CUDA device ({why}; torch {torch.__version__})")
        return NO_CUDA
    name = torch.cuda.get_device_name(0)
    print(f"PASS cuda: {name} (torch {torch.__version__}, CUDA {torch.version.cuda})")
    return 0


def providers() -> int:
    """Open a session per GPU provider the installed ONNX Runtime offers; SKIP the others,
    each with the reason the tuner gives: the provider is not offered, or its library cannot
    load here (``provider_unloadable``: for TensorRT first its TensorRT, after loading pip's
    TensorRT libraries as the tuner does before opening a session)."""
    items = Items()
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError as error:
        items.say("SKIP", "providers", f"ONNX Runtime or onnx is not installed ({error})")
        return items.code()
    from aitune_fp.effects.backends._ort_install import provider_missing, provider_unloadable
    from aitune_fp.effects.backends._ort_session import ProviderMismatch, open_checked_session
    from aitune_fp.effects.machine.environment import onnxruntime_facts

    print(f"INFO onnxruntime: {ort.__version__} available {ort.get_available_providers()}")
    print(f"INFO onnxruntime builds: {onnxruntime_facts()}")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    asks = {
        "cuda": ["CUDAExecutionProvider"],
        "tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "relu.onnx")
        onnx.save(model, path)
        for name, asked in asks.items():
            missing = provider_missing(asked[0]) or provider_unloadable(asked[0])
            if missing is not None:
                items.say("SKIP", f"provider {name}", missing)
                continue
            try:
                session = open_checked_session(ort, path, ort.SessionOptions(), asked)
                items.say("PASS", f"provider {name}", f"session runs on {session.get_providers()}")
            except ProviderMismatch as error:
                items.say("FAIL", f"provider {name}", str(error))
    return items.code()


def _demo(name: str) -> tuple[torch.nn.Module, list[Any]]:
    """A demo model and its samples, in float32 as a user hands them to the tuner."""
    from aitune_fp.models import DEMO_MODELS

    demo = DEMO_MODELS[name]
    return demo.build().eval(), demo.samples()


@contextlib.contextmanager
def switches_mode(switches: str) -> Iterator[None]:
    """strict: torch's float32 switches strict; tf32: TF32 matmuls and convolutions."""
    from aitune_fp.effects.checks.tf32 import STRICT, Tf32Switches, use_switches

    with use_switches(STRICT if switches == "strict" else Tf32Switches("tf32", "tf32")):
        yield


def on_dedicated_stream(runner: Callable[..., Any], device: torch.device) -> Callable[..., Any]:
    """``runner`` enqueued on aitune_fp's dedicated stream, joined the way TensorRT and ONNX
    Runtime runners join it (the stream waits for the caller's, the caller's for it)."""
    from aitune_fp.effects.backends._streams import dedicated_stream, enter, leave

    stream = dedicated_stream(device)

    def run(*args: Any, **kwargs: Any) -> Any:
        caller = enter(stream, device)
        with torch.cuda.stream(stream):
            out = runner(*args, **kwargs)
        leave(caller, stream)
        return out

    return run


def _medians(profile: Any) -> dict[int, float]:
    return {bs: statistics.median(v) for bs, v in profile.latencies_ms.items()}


def check_case(
    config: Any, model: str, switches: str, device: torch.device, work_dir: Path
) -> tuple[str, str]:
    """Build, validate and time one candidate: ``(status, detail)``.

    The model stays float32; validation is the tuner's own (the float32 eager reference
    and, for a reduced-precision config, the accuracy policy). On CUDA it is timed with
    CUDA events twice, on the caller's stream and enqueued on the dedicated stream
    (validated there too); a dedicated-stream timing under half the caller-stream one
    means the events missed the work, a FAIL.
    """
    from aitune_fp.effects.inputs.samples import normalise_samples
    from aitune_fp.shell.io import perform

    module, raw = _demo(model)
    module = module.to(device)
    samples = normalise_samples(raw).to(device)
    with switches_mode(switches):
        built = perform(config.build(module, samples, device, work_dir))
        if _is_failure(built):
            return "FAIL", f"build: {built.failure().message}"
        ok = built.unwrap()
        try:
            return _validate_and_time(ok, config.describe(), module, samples, device)
        finally:
            ok.close()


def _validate_and_time(
    ok: Any, name: str, module: torch.nn.Module, samples: Any, device: torch.device
) -> tuple[str, str]:
    """Validate and time a built candidate on the caller's (and the dedicated) stream."""
    from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
    from aitune_fp.effects.checks.tf32 import candidate_precision
    from aitune_fp.effects.checks.validate import validate
    from aitune_fp.effects.measure.profiler import SweepPlan, profile_runner
    from aitune_fp.effects.measure.timing import ProfileSettings
    from aitune_fp.shell.io import perform

    sizes = (1, 8)
    settings = ProfileSettings(input_mode="same", cuda_events=device.type == "cuda", warmup=None)
    runners = {"caller stream": ok.runner}
    if device.type == "cuda":
        runners["dedicated stream"] = on_dedicated_stream(ok.runner, device)
    timings: dict[str, dict[int, float]] = {}
    report = None
    for where, runner in runners.items():
        checked = perform(
            validate(name, _with(ok, runner), module, samples, device, batch_sizes=sizes)
        )
        if _is_failure(checked):
            return "FAIL", f"validate ({where}): {checked.failure().message}"
        report = report or checked.unwrap()
        timed = perform(
            profile_runner(name, runner, samples, device,
                           SweepPlan(sizes, fixed_steps(warmup=5, steps=20), never_stop()),
                           settings)
        )  # fmt: skip
        if _is_failure(timed):
            return "FAIL", f"profile ({where}): {timed.failure().message}"
        timings[where] = _medians(timed.unwrap())
    assert report is not None
    judged = candidate_precision(ok.info.get("precision"), device) or "float32"
    detail = f"judged at {judged}: {_figures(report.as_dict())}; " + "; ".join(
        f"{where} " + ", ".join(f"bs{bs} {ms:.3f} ms" for bs, ms in sorted(t.items()))
        for where, t in timings.items()
    )
    if "dedicated stream" in timings:
        for bs, ms in timings["dedicated stream"].items():
            if ms < 0.5 * timings["caller stream"][bs]:
                return "FAIL", detail + f" (bs{bs}: the dedicated-stream events missed the work)"
    return "PASS", detail


def _figures(report: dict[str, float]) -> str:
    """The accuracy figures a reader wants first, as they are in the validation report."""
    names = ("max_abs_error", "rms_rel_error", "cosine", "top1_agreement")
    return ", ".join(f"{n} {report[n]:.3g}" for n in names if n in report) or "no figures"


def _is_failure(result: Any) -> bool:
    from returns.result import Failure

    return isinstance(result, Failure)


def _with(built: Any, runner: Callable[..., Any]) -> Any:
    import dataclasses

    return dataclasses.replace(built, runner=runner)


def backends(
    device_name: str = "cuda",
    run_case: Callable[[Any, torch.device, Path, float], tuple[str, str]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """The tuner's candidate configs (scripts/gpu_cases.py, cheap cases first), each a SKIP
    with its reason where its SDK is missing; the last item names every SDK that could not
    run here.

    Rules: the step's time is what is left of it (:func:`step_left`: the step's end as
    gpu-check.sh set it, its start-up counted) less :data:`LAST_LINES_S` (kept for the
    closing items); each case (one forked child, ``run_case``) gets at most
    :data:`CASE_S` and never more than what is left of the step, so the step always ends
    by itself, its "not runnable here" line printed; a case that would start with under
    :data:`MIN_CASE_S` left is a SKIP "not run: the step's time is spent", never a PASS.
    With ``device_name="cpu"`` the same code path runs ONNX Runtime's CPU provider on the
    MLP (``backends-cpu``: a rehearsal on a machine without a GPU).
    """
    from gpu_cases import label, plan

    run_case = run_case or _in_child
    items = Items()
    deadline = clock() + step_left(150.0) - LAST_LINES_S
    device = torch.device("cuda", 0) if device_name == "cuda" else torch.device("cpu")
    missing: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(plan(device.type)):
            left = deadline - clock()
            if left < MIN_CASE_S:
                items.say("SKIP", label(case), "not run: the step's time is spent")
                continue
            until = clock() + min(CASE_S, left)
            status, detail = run_case(case, device, Path(tmp) / str(i), until)
            items.say(status, label(case), detail)
            if status == "SKIP":
                missing.setdefault(detail, []).append(case[0].describe())
    if missing:
        said = "; ".join(f"{why} ({', '.join(names)})" for why, names in missing.items())
        items.say("SKIP", "not runnable here", said)
    return items.code()


def _in_child(case: Any, device: torch.device, work_dir: Path, until: float) -> tuple[str, str]:
    """One case in a forked child (this process never touches CUDA, so every child starts
    clean): ``(status, detail)``; a child that crashes, hangs past ``until`` or dies is
    that case's FAIL, and the next case still runs."""
    import signal

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the case, its line on the pipe, exit
        os.close(read)
        config, model, switches = case
        t0 = time.perf_counter()
        try:
            reason = config.unavailable_reason(device)
            if reason is not None:
                status, detail = "SKIP", reason
            else:
                status, detail = check_case(config, model, switches, device, work_dir)
                detail += f"; {time.perf_counter() - t0:.1f} s"
        except Exception as error:  # a crash of one case is that case's FAIL
            status, detail = "FAIL", f"{type(error).__name__}: {error}"
        os.write(write, f"{status}\t{detail}".encode())
        os._exit(0)
    os.close(write)
    chunks: list[bytes] = []
    while True:
        left = until - time.monotonic()
        done, status_word = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            return "FAIL", "hung: killed when its time (the step's, at most CASE_S) ran out"
        time.sleep(0.2)
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    text = b"".join(chunks).decode(errors="replace")
    if "\t" in text:
        head, detail = text.split("\t", 1)
        return head, detail
    code = os.waitstatus_to_exitcode(status_word)
    why = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    return "FAIL", f"the case's process died ({why}) before it answered"


def memory() -> int:
    """The CUDA memory probe: 64 MiB held, 32 MiB of workspace per call, a 128 MiB pool of
    inputs; the figure must be the backend's ~96 MiB, never the pool's 128+."""
    from aitune_fp.core.measure.stop_rules import fixed_steps, never_stop
    from aitune_fp.effects.inputs.samples import normalise_samples
    from aitune_fp.effects.measure.memory import MemoryWatch
    from aitune_fp.effects.measure.profiler import SweepPlan, profile_runner
    from aitune_fp.effects.measure.timing import ProfileSettings

    items = Items()
    device = torch.device("cuda", 0)
    torch.ones(1, device=device).add_(1.0)  # CUDA's context and first kernels: not ours
    torch.cuda.synchronize(device)
    watch = MemoryWatch(device)
    watch.on_stage("build")
    held = torch.ones(16 * MIB, device=device)  # 64 MiB the "backend" keeps

    def runner(x: torch.Tensor) -> torch.Tensor:
        work = torch.empty(8 * MIB, device=device)  # 32 MiB of workspace per call
        return x[0, :1] + work[:1] + held[:1]

    watch.on_stage("profile")
    samples = normalise_samples(torch.randn(4, 4 * MIB))  # a 64 MiB batch; the pool holds 2
    profile_runner(
        "probe",
        runner,
        samples,
        device,
        SweepPlan((4,), fixed_steps(warmup=2, steps=5), never_stop()),
        ProfileSettings(input_mode="rotating", pool_factor=0.0, warmup=None, cuda_events=True),
    )
    peak = watch.peak_mb()
    detail = f"peak {peak} MiB (expected about 96: 64 held + 32 workspace, the 128 MiB pool out)"
    items.say("PASS" if peak is not None and 88.0 <= peak <= 130.0 else "FAIL", "memory", detail)
    return items.code()


def pytest_verdict(returncode: int, output: str) -> tuple[str, str]:
    """The gpu-tests step's status from pytest's exit code and output: PASS only when at
    least one test passed and none failed; all skipped (or none collected) is a SKIP.

    >>> pytest_verdict(0, "3 passed, 2 skipped in 4.1s")
    ('PASS', '3 passed, 2 skipped in 4.1s')
    >>> pytest_verdict(0, "12 skipped in 1.0s")[0], pytest_verdict(1, "1 failed, 2 passed")[0]
    ('SKIP', 'FAIL')
    """
    lines = [ln.strip("= ") for ln in output.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "no output"
    if returncode not in (0, 5):
        return "FAIL", last
    return ("PASS" if " passed" in f" {last}" else "SKIP"), last


GPU_MARK = re.compile(r"mark\.gpu\b")
"""How a test file marks a ``gpu`` test (``@pytest.mark.gpu``, ``pytestmark = pytest.mark.gpu``)."""
GPU_TESTS_MARKS = "gpu and not heavy"


def gpu_test_files(tests: Path) -> list[Path]:
    """The test files under ``tests`` that hold a ``gpu`` test (pytest then imports only
    these, not the whole suite)."""
    return sorted(p for p in tests.rglob("test_*.py") if GPU_MARK.search(p.read_text()))


def gpu_tests(tests: Path = Path("tests")) -> int:
    """``pytest -m "gpu and not heavy"`` over :func:`gpu_test_files`, within the step's
    time (:func:`step_left` less 5 s for the lines after it): every skip reason is an
    item; PASS only when a test really ran."""
    items = Items()
    files = [str(f) for f in gpu_test_files(tests)]
    limit = max(step_left(60.0) - 5.0, 5.0)
    command = [sys.executable, "-m", "pytest", "-m", GPU_TESTS_MARKS, "-q", "-rs",
               "--allow-unexpected-skips",  # this minimal environment lacks the test extras
               "-p", "no:cacheprovider", *files]  # fmt: skip
    print(f"INFO gpu-tests: {len(files)} files hold gpu tests: {' '.join(files)}")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired as error:
        said = error.stdout.decode(errors="replace") if isinstance(error.stdout, bytes) else ""
        print(said[-6000:])
        items.say("FAIL", "gpu-tests", f"pytest ran past the step's {limit:.0f} s")
        return items.code()
    print(done.stdout[-6000:], done.stderr[-2000:], sep="\n")
    for line in done.stdout.splitlines():
        if line.startswith("SKIPPED"):
            items.say("SKIP", "gpu test", line.removeprefix("SKIPPED").strip())
    status, detail = pytest_verdict(done.returncode, done.stdout)
    items.say(status, "gpu-tests", detail)
    return items.code()


def overhead(blocks: int = 15, calls: int = 2000) -> int:
    """TunedModule's per-call overhead on CUDA: the tuned module around an eager CUDA runner
    (envelope with the device check) against the runner itself, interleaved blocks."""
    from aitune_fp.core.records import BackendProfilingResult, Selection
    from aitune_fp.effects.backends._runner import in_inference_mode
    from aitune_fp.effects.backends.base import Built
    from aitune_fp.effects.backends.inductor import InductorJIT
    from aitune_fp.effects.inputs.samples import normalise_samples
    from aitune_fp.models import DEMO_MODELS
    from aitune_fp.shell.tuned_module import CallLimits, TunedModule

    items = Items()
    device = torch.device("cuda", 0)
    demo = DEMO_MODELS["mlp"]
    module = demo.build().eval().to(device)
    samples = normalise_samples(demo.samples()).to(device)
    runner = in_inference_mode(module)
    built = Built(runner, info={"device": str(device)})
    selection = Selection("inductor", BackendProfilingResult(1.0, 1, 1.0, 1.0), False)
    tuned = TunedModule(built, InductorJIT(), selection, samples, limits=CallLimits(64))
    x = samples.items[0].args[0]
    direct: list[float] = []
    wrapped: list[float] = []

    def per_call_us(fn: Callable[[], Any]) -> float:
        torch.cuda.synchronize(device)
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        spent = (time.perf_counter_ns() - t0) / calls / 1000.0
        torch.cuda.synchronize(device)
        return spent

    with torch.inference_mode():
        for block in range(blocks):
            pair = [(direct, lambda: runner(x)), (wrapped, lambda: tuned(x))]
            for sink, fn in pair if block % 2 == 0 else reversed(pair):
                sink.append(per_call_us(fn))
    diffs = [w - d for w, d in zip(wrapped, direct, strict=True)]
    cost = statistics.median(diffs)
    detail = (
        f"median {cost:.2f} µs/call over the runner's {statistics.median(direct):.2f} µs "
        f"(min {min(diffs):.2f}, max {max(diffs):.2f}; target < 5 µs, FAIL over 20 µs)"
    )
    items.say("PASS" if cost < 20.0 else "FAIL", "overhead", detail)
    return items.code()


def imports() -> int:
    """Check that everything the GPU steps import exists (runs without a GPU)."""
    import importlib
    import inspect

    for step in (
        providers,
        check_case,
        _validate_and_time,
        backends,
        memory,
        overhead,
        switches_mode,
        _demo,
    ):
        for line in inspect.getsource(step).splitlines():
            words = line.split()
            if words[:1] == ["from"] and words[1].startswith("aitune_fp") and "import" in words:
                module = importlib.import_module(words[1])
                for name in " ".join(words[3:]).replace(",", " ").split():
                    getattr(module, name)
    print("PASS imports: every module and name the GPU steps use exists")
    return 0


def plan_step() -> int:
    """Print the backends step's cases (no GPU needed: the dry run's plan)."""
    from gpu_cases import core_cases, label, plan

    core = {label(c) for c in core_cases()}
    for case in plan("cuda"):
        print(f"case {label(case)}" + (" (core)" if label(case) in core else ""))
    return 0


def main(argv: list[str]) -> int:
    """Run the step named by ``argv[0]``."""
    steps: dict[str, Callable[[], int]] = {
        "cuda": lambda: cuda(),
        "plan": plan_step,
        "providers": providers,
        "backends": backends,
        "backends-cpu": lambda: backends("cpu"),
        "memory": memory,
        "gpu-tests": gpu_tests,
        "overhead": overhead,
        "imports": imports,
    }
    if not argv or argv[0] not in steps:
        print(f"usage: gpu_check.py {{{','.join(steps)}}}", file=sys.stderr)
        return 2
    return steps[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
