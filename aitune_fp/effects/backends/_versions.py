"""The versions of the GPU libraries aitune_fp supports, and the check against them.

Rules:
- each range is declared by the backend that needs the library
  (:class:`~aitune_fp.effects.backends.base.Library` in its declaration's ``versions``);
- TensorRT 10.x and 11.x are supported (``>=10.0,<12``): on 10.x reduced precision is the
  builder flag, on 11.x (no precision flags, every network strongly typed) it is a network
  whose types are already the requested dtype (see :mod:`._precision`);
- Torch-TensorRT 2.12–2.14 (``>=2.12,<2.15``): every one of them honours explicit typing
  (a module cast to the dtype), which is the mechanism used, and its result is read back;
- ONNX Runtime ``>=1.18``;
- a version is read from distribution metadata (no SDK import); a library outside its range
  is a backend that cannot run here, with a reason naming the version and the range; a
  version that cannot be read passes (the build's own read-back still applies).
"""

from __future__ import annotations

import re

from aitune_fp.effects.backends.base import Library
from aitune_fp.effects.machine.environment import distribution_version


def _libraries() -> dict[str, Library]:
    """Every library a shipped backend declares, by name (the first declaration wins)."""
    from aitune_fp.effects.backends.registry import declarations

    found: dict[str, Library] = {}
    for declaration in declarations():
        for library in declaration.versions:
            found.setdefault(library.name, library)
    return found


def supported_ranges() -> dict[str, tuple[tuple[int, ...], tuple[int, ...] | None]]:
    """Each declared library's supported range: ``(lowest, first unsupported)``; ``None``:
    no ceiling (libraries declared without a range are left out).

    >>> supported_ranges()["tensorrt"]
    ((10, 0), (12,))
    """
    return {n: lib.supported for n, lib in _libraries().items() if lib.supported is not None}


def parse_version(text: str) -> tuple[int, ...]:
    """The leading numeric release of a version string.

    >>> parse_version("10.16.1.11"), parse_version("2.13.0+cu130"), parse_version("11.0.0b1")
    ((10, 16, 1, 11), (2, 13, 0), (11, 0, 0))
    """
    match = re.match(r"\d+(?:\.\d+)*", text.strip())
    return tuple(int(p) for p in match.group(0).split(".")) if match else ()


def range_text(library: str) -> str:
    """The supported range in pip's syntax.

    >>> range_text("torch_tensorrt"), range_text("onnxruntime")
    ('>=2.12,<2.15', '>=1.18')
    """
    low, high = supported_ranges()[library]
    text = ">=" + ".".join(map(str, low))
    return text if high is None else text + ",<" + ".".join(map(str, high))


def outside_range(library: str, version: str | None) -> str | None:
    """A reason when ``version`` of ``library`` is outside the supported range, else None.

    >>> outside_range("tensorrt", "11.4.0.106") is None, outside_range("tensorrt", None)
    (True, None)
    >>> outside_range("torch_tensorrt", "2.11.0")
    'torch_tensorrt 2.11.0 is outside the supported range >=2.12,<2.15'
    """
    if version is None:
        return None
    parsed = parse_version(version)
    low, high = supported_ranges()[library]
    if not parsed or (parsed >= low and (high is None or parsed < high)):
        return None
    return f"{library} {version} is outside the supported range {range_text(library)}"


def installed_version(library: str) -> str | None:
    """The installed version of ``library`` from distribution metadata, else None."""
    return distribution_version(*_libraries()[library].distributions)


def unsupported(*libraries: str) -> str | None:
    """The first reason one of ``libraries`` is installed in an unsupported version."""
    for library in libraries:
        reason = outside_range(library, installed_version(library))
        if reason is not None:
            return reason
    return None
