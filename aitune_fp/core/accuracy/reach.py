"""What the machine computes natively, and the plan cut to it (pure).

Rules:
- :class:`Capabilities` is what a device computes natively, read once per device by the
  effect layer (:mod:`aitune_fp.effects.machine.capabilities`) or given as a value (tests,
  a simulated machine): the reduced precisions it computes natively (``native``), the
  facts that told (``features``: CPU flags, ``sm_80``) and, on CUDA, the compute
  capability; ``float32`` is native everywhere;
- :func:`why_not` says why a precision is not native on a device, naming the missing
  capability, or ``None`` when it is;
- :func:`reach` splits the candidates: a candidate computing in a precision that is not
  native here is left out (a :class:`LeftOut`: its name, precision and reason), not built
  and not a failure; one whose precision the user named (``explicit``) is kept with the
  reason as a warning (:attr:`Reach.warned`), so the build says what happens to it;
- :func:`left_out_line` is the plan's one line naming what was left out and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

REDUCED: Final = ("bfloat16", "float16", "int8")
"""The precisions whose native support differs between machines."""
_CPU_NEEDS: Final = {
    "bfloat16": "AVX512-BF16 or AMX-BF16",
    "float16": "AVX512-FP16 or AMX-FP16",
    "int8": "AVX2, AVX-VNNI or AVX512-VNNI",
}
_CUDA_NEEDS: Final = {"bfloat16": (8, 0), "float16": (7, 0), "int8": (6, 1)}
"""The least CUDA compute capability that computes a precision natively (Ampere for
bfloat16, tensor cores for float16, dp4a for int8)."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a device (``cpu`` or ``cuda``) computes natively (see the module's rules).

    >>> avx2 = Capabilities("cpu", frozenset({"int8"}), frozenset({"avx2"}))
    >>> avx2.is_native("float32"), avx2.is_native("bfloat16"), avx2.is_native("int8")
    (True, False, True)
    """

    device: str
    native: frozenset[str]
    features: frozenset[str] = frozenset()
    compute_capability: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.native) - set(REDUCED))
        if unknown:
            raise ValueError(f"native precisions must be some of {REDUCED}, got {unknown}")

    def is_native(self, precision: str) -> bool:
        """Whether ``precision`` runs natively here (``float32`` always does)."""
        return precision not in REDUCED or precision in self.native


def cuda_capabilities(major: int, minor: int) -> Capabilities:
    """A CUDA device's capabilities from its compute capability (see ``_CUDA_NEEDS``).

    >>> sorted(cuda_capabilities(7, 5).native), sorted(cuda_capabilities(9, 0).native)
    (['float16', 'int8'], ['bfloat16', 'float16', 'int8'])
    """
    native = frozenset(p for p, least in _CUDA_NEEDS.items() if (major, minor) >= least)
    return Capabilities("cuda", native, frozenset({f"sm_{major}{minor}"}), (major, minor))


def why_not(precision: str, capabilities: Capabilities) -> str | None:
    """Why ``precision`` is not native on the device, or ``None`` when it is.

    >>> avx2 = Capabilities("cpu", frozenset({"int8"}), frozenset({"avx2"}))
    >>> why_not("bfloat16", avx2)
    'this CPU has no native bfloat16 (needs AVX512-BF16 or AMX-BF16): it would be emulated'
    >>> why_not("bfloat16", cuda_capabilities(7, 5))
    'this GPU (compute capability 7.5) has no native bfloat16 (needs 8.0+)'
    >>> why_not("int8", avx2) is None
    True
    """
    if capabilities.is_native(precision):
        return None
    found = capabilities.compute_capability
    if capabilities.device == "cuda" and found is not None:
        least = ".".join(map(str, _CUDA_NEEDS[precision]))
        has = ".".join(map(str, found))
        return f"this GPU (compute capability {has}) has no native {precision} (needs {least}+)"
    needs = _CPU_NEEDS[precision]
    return f"this CPU has no native {precision} (needs {needs}): it would be emulated"


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A candidate the plan left out: its name, its precision and why."""

    backend: str
    precision: str
    reason: str


@dataclass(frozen=True, slots=True)
class Reach:
    """The candidates' split: the kept names in order, those left out, and those kept
    against the machine because the user named their precision (``warned``)."""

    kept: tuple[str, ...]
    left_out: tuple[LeftOut, ...] = ()
    warned: tuple[LeftOut, ...] = ()


def reach(
    candidates: Sequence[tuple[str, str]],
    capabilities: Capabilities,
    explicit: frozenset[str] = frozenset(),
) -> Reach:
    """Split ``candidates`` (name, precision) by what runs natively here (module rules).

    >>> avx2 = Capabilities("cpu", frozenset({"int8"}))
    >>> found = reach([("ort", "float32"), ("eager-bf16", "bfloat16")], avx2)
    >>> found.kept, [x.backend for x in found.left_out]
    (('ort',), ['eager-bf16'])
    >>> reach([("eager-bf16", "bfloat16")], avx2, frozenset({"bfloat16"})).kept
    ('eager-bf16',)
    """
    kept: list[str] = []
    left: list[LeftOut] = []
    warned: list[LeftOut] = []
    for name, precision in candidates:
        reason = why_not(precision, capabilities)
        if reason is not None:
            (warned if precision in explicit else left).append(LeftOut(name, precision, reason))
        if reason is None or precision in explicit:
            kept.append(name)
    return Reach(tuple(kept), tuple(left), tuple(warned))


def left_out_line(left_out: Sequence[LeftOut]) -> str | None:
    """The plan's line naming what was left out and why (``None`` when nothing was).

    >>> cpu = Capabilities("cpu", frozenset())
    >>> left_out_line(reach([("a", "bfloat16"), ("b", "bfloat16")], cpu).left_out)[:60]
    'left out (not native here): a, b: this CPU has no native bfl'
    >>> left_out_line(()) is None
    True
    """
    if not left_out:
        return None
    reasons = sorted({x.reason for x in left_out})
    parts = [", ".join(x.backend for x in left_out if x.reason == r) + f": {r}" for r in reasons]
    return "left out (not native here): " + "; ".join(parts)
