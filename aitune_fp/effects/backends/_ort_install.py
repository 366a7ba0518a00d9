"""Which ONNX Runtime build the ``onnxruntime`` package really holds, read from metadata.

Rules:
- every ONNX Runtime distribution (``onnxruntime``, ``onnxruntime-gpu``, …) installs into
  the same ``onnxruntime/`` folder; when two are installed, the one installed last
  overwrote the other's native extension and is the one that runs;
- the active build is the distribution whose ``RECORD`` entry for the native extension
  (``onnxruntime/capi/onnxruntime_pybind11_state*``) matches the file on disk (size first,
  then sha256 when sizes tie); with a single distribution installed it is that one;
- an installed ``onnxruntime-gpu`` that is not the active build is *shadowed*: its CUDA and
  TensorRT providers are missing because another build's extension runs instead, and
  :func:`shadow_reason` says so with both versions and the fix;
- nothing here imports ``onnxruntime``: it reads distribution metadata only, so asking is
  cheap and safe before any SDK is loaded; the builds are looked up by name, so only their
  own metadata is read, never every installed distribution's (every run record asks).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import hashlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Final

GPU_BUILD: Final = "onnxruntime-gpu"
"""The distribution that ships the CUDA and TensorRT execution providers."""

BUILDS: Final = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-openvino",
    "onnxruntime-directml",
    "onnxruntime-qnn",
    "onnxruntime-training",
)
"""Distributions known to install the ``onnxruntime`` package (canonical names)."""

_EXTENSION: Final = "onnxruntime/capi/onnxruntime_pybind11_state"


@dataclass(frozen=True, slots=True)
class OrtInstall:
    """The ONNX Runtime distributions installed and which one the package really holds.

    ``installed`` is ``(distribution, version)`` pairs, sorted; ``active`` is the build whose
    files are on disk (``None`` when none is installed or none matches, e.g. a source build).
    """

    installed: tuple[tuple[str, str], ...]
    active: str | None

    @property
    def version(self) -> str | None:
        """The active build's version (the first installed one's when none matched)."""
        versions = dict(self.installed)
        if self.active is not None:
            return versions[self.active]
        return self.installed[0][1] if self.installed else None

    @property
    def shadowed(self) -> tuple[str, ...]:
        """Installed distributions whose native extension was overwritten by another's."""
        if self.active is None or len(self.installed) < 2:
            return ()
        return tuple(name for name, _ in self.installed if name != self.active)


def _canonical(name: str) -> str:
    """``onnxruntime_gpu`` → ``onnxruntime-gpu`` (PEP 503, lower case)."""
    return name.lower().replace("_", "-").replace(".", "-")


def _sha256(path: Path) -> str:
    """The file's sha256 in RECORD's form (urlsafe base64, no padding)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def _owns_extension(dist: metadata.Distribution) -> bool | None:
    """Whether the extension on disk is the one ``dist`` recorded (None: cannot tell)."""
    for entry in dist.files or ():
        if not str(entry).startswith(_EXTENSION):
            continue
        path = Path(str(dist.locate_file(entry)))
        try:
            size = path.stat().st_size
        except OSError:
            return False
        if entry.size is not None and entry.size != size:
            return False
        if entry.hash is None:
            return None
        return entry.hash.mode == "sha256" and entry.hash.value == _sha256(path)
    return None


def ort_install(path: Iterable[str] | None = None) -> OrtInstall:
    """The ONNX Runtime builds installed on ``path`` (default ``sys.path``) and the active one.

    >>> ort_install(path=[]).installed, ort_install(path=[]).active
    ((), None)
    """
    where = sys.path if path is None else list(path)
    found: dict[str, metadata.Distribution] = {}
    for build in BUILDS:  # looked up by name: no other distribution's metadata is parsed
        for dist in metadata.distributions(name=build, path=where):
            if _canonical(dist.metadata["Name"] or "") == build:
                found[build] = dist  # the first on the path, as the import system sees it
                break
    installed = tuple(sorted((name, dist.version) for name, dist in found.items()))
    if len(found) == 1:
        return OrtInstall(installed, next(iter(found)))
    owners = [name for name, dist in sorted(found.items()) if _owns_extension(dist)]
    return OrtInstall(installed, owners[0] if len(owners) == 1 else None)


def shadow_reason(install: OrtInstall) -> str | None:
    """Why the GPU providers are missing when ``onnxruntime-gpu`` is installed but shadowed.

    >>> both = OrtInstall((("onnxruntime", "1.32.0"), ("onnxruntime-gpu", "1.31.1")), "onnxruntime")
    >>> print(shadow_reason(both))  # doctest: +NORMALIZE_WHITESPACE
    onnxruntime-gpu 1.31.1 is shadowed by onnxruntime 1.32.0 (both install the onnxruntime
    package and onnxruntime's files won); fix: pip uninstall -y onnxruntime onnxruntime-gpu
    && pip install onnxruntime-gpu
    >>> shadow_reason(OrtInstall((("onnxruntime-gpu", "1.31.1"),), "onnxruntime-gpu")) is None
    True
    """
    versions = dict(install.installed)
    if GPU_BUILD not in versions or len(versions) < 2 or install.active == GPU_BUILD:
        return None
    others = " ".join(name for name, _ in install.installed)
    fix = f"fix: pip uninstall -y {others} && pip install {GPU_BUILD}"
    if install.active is None:
        return (
            f"{GPU_BUILD} {versions[GPU_BUILD]} is installed together with "
            f"{', '.join(n for n in versions if n != GPU_BUILD)} "
            f"(they share the onnxruntime package and it cannot be told which build won); {fix}"
        )
    return (
        f"{GPU_BUILD} {versions[GPU_BUILD]} is shadowed by {install.active} "
        f"{versions[install.active]} (both install the onnxruntime package and "
        f"{install.active}'s files won); {fix}"
    )


def provider_missing(provider: str) -> str | None:
    """A reason when the installed onnxruntime does not offer ``provider``."""
    import onnxruntime as ort

    if provider in ort.get_available_providers():
        return None
    shadowed = shadow_reason(ort_install())
    if shadowed is not None:
        return f"onnxruntime's {provider} is missing: {shadowed}"
    return f"onnxruntime's {provider} is not installed (needs onnxruntime-gpu)"


ORT_TENSORRT_LIBRARY: Final = "libnvinfer.so.10"
"""The TensorRT library ONNX Runtime's GPU builds (1.18 to 1.23) link their TensorRT EP
against; the EP dlopens it by this name when a session is created."""


def load_tensorrt_libraries() -> None:
    """Load pip's TensorRT libraries into this process, if it is installed: the ``tensorrt``
    package loads them from its own folder (``tensorrt_libs``), which is not on the
    loader's path, so the EP's later dlopen by soname finds them already loaded."""
    with contextlib.suppress(Exception):
        import tensorrt  # noqa: F401


PROVIDER_LIBRARIES: Final = {
    "CUDAExecutionProvider": "libonnxruntime_providers_cuda.so",
    "TensorrtExecutionProvider": "libonnxruntime_providers_tensorrt.so",
}
"""The shared libraries ONNX Runtime loads for its GPU providers when a session is created
(``onnxruntime/capi``; both depend on ``libonnxruntime_providers_shared.so`` beside them)."""


def provider_unloadable(
    provider: str, capi: Path | None = None, load: Callable[[str], Any] | None = None
) -> str | None:
    """Why ONNX Runtime's ``provider`` library cannot be loaded here, or None.

    ``get_available_providers()`` lists a GPU provider whenever the build has it, but its
    library (and through it CUDA, cuBLAS and cuDNN of the CUDA major the build was made
    for) is opened only when a session is created: a CUDA-12 build beside a CUDA-13 torch,
    or a missing cuDNN, would otherwise cost each config a full export before failing. So
    the library is loaded here first (after ``libonnxruntime_providers_shared.so``, as
    ONNX Runtime does); a library this layout does not have is left to the session. The
    TensorRT provider first needs its TensorRT (:func:`tensorrt_ep_unloadable`).

    >>> import tempfile
    >>> def missing(name: str) -> None:
    ...     if name.endswith("cuda.so"):
    ...         raise OSError("libcudnn.so.9: cannot open shared object file")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (Path(folder) / "libonnxruntime_providers_cuda.so").write_bytes(b"")
    ...     print(provider_unloadable("CUDAExecutionProvider", Path(folder), missing))
    ...     # doctest: +ELLIPSIS
    onnxruntime's CUDAExecutionProvider cannot load ... (libcudnn.so.9: cannot open ...
    """
    name = PROVIDER_LIBRARIES.get(provider)
    if name is None:
        return None
    if provider == "TensorrtExecutionProvider" and (why := tensorrt_ep_unloadable(load)):
        return why
    if capi is None:
        import onnxruntime

        capi = Path(onnxruntime.__file__).parent / "capi"
    if not (capi / name).exists():
        return None
    opener = load or (lambda path: ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))
    try:
        shared = capi / "libonnxruntime_providers_shared.so"
        if shared.exists():
            opener(str(shared))
        opener(str(capi / name))
    except OSError as error:
        return (
            f"onnxruntime's {provider} cannot load {name} here ({error}): the CUDA, cuBLAS "
            "or cuDNN its build links is missing or of another major version (install the "
            "onnxruntime-gpu build for this machine's CUDA, or its cuDNN)"
        )
    return None


def tensorrt_ep_unloadable(load: Callable[[str], Any] | None = None) -> str | None:
    """Why ONNX Runtime's TensorRT EP could not load its TensorRT here, or None.

    ``get_available_providers()`` lists the TensorRT EP whenever the build has it, but the
    EP opens :data:`ORT_TENSORRT_LIBRARY` only when a session is created: ask first.

    >>> def missing(name: str) -> None:
    ...     raise OSError(f"{name}: cannot open shared object file")
    >>> print(tensorrt_ep_unloadable(missing))  # doctest: +ELLIPSIS
    onnxruntime's TensorRT EP needs libnvinfer.so.10 (TensorRT 10), which cannot be loaded...
    """
    load_tensorrt_libraries()
    try:
        (load or ctypes.CDLL)(ORT_TENSORRT_LIBRARY)
    except OSError as error:
        return (
            f"onnxruntime's TensorRT EP needs {ORT_TENSORRT_LIBRARY} (TensorRT 10), which "
            f"cannot be loaded here ({error}); install TensorRT 10 (pip install "
            "'aitune_fp[gpu]' pins it) or put its lib folder on LD_LIBRARY_PATH"
        )
    return None
