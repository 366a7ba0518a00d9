"""Call specs read without torch's deprecated ``TreeSpec.children_specs`` (issue 26, §8).

Source checked: torch 2.13.0's ``torch/utils/_pytree.py`` (installed here): reading
``TreeSpec.children_specs`` emits ``FutureWarning: treespec.children_specs is deprecated.
Use treespec.child(index) ...``; ``child(index)`` and ``children()`` are the supported
accessors. The specs below are real ``TreeSpec`` values; only the program and the loaded
package around them are stand-ins with the attributes aitune_fp reads
(``module_call_graph[0].signature.in_spec``; ``loader.get_call_spec()`` / ``boxed_run``).
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import torch
import torch.utils._pytree as pytree

from aitune_fp.effects.backends._onnx import program_input_names
from aitune_fp.effects.backends._treespec import child_spec
from aitune_fp.effects.backends.aot_inductor import _package_runner
from aitune_fp.effects.inputs.samples import normalise_samples


def _in_spec() -> pytree.TreeSpec:
    return pytree.tree_flatten(((torch.zeros(1),), {"mask": torch.zeros(1)}))[1]


def test_program_input_names_raise_no_future_warning() -> None:
    """The ONNX path reads the program's keyword names without a deprecation warning."""
    spec = normalise_samples({"mask": torch.zeros(1, 2)}).spec
    in_spec = pytree.tree_flatten(((), {"mask": torch.zeros(1)}))[1]
    program = SimpleNamespace(
        module_call_graph=[SimpleNamespace(signature=SimpleNamespace(in_spec=in_spec))]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        assert program_input_names(program, spec) == ("mask",)


def test_the_aot_package_runner_raises_no_future_warning() -> None:
    """The AOTInductor runner reads the package's keyword names without a deprecation
    warning and feeds keywords after the positional inputs."""
    out_spec = pytree.tree_flatten(torch.zeros(1))[1]
    loader = SimpleNamespace(
        get_call_spec=lambda: (pytree.treespec_dumps(_in_spec()), pytree.treespec_dumps(out_spec)),
        boxed_run=lambda flat: [flat[0] + flat[1]],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        run = _package_runner(SimpleNamespace(loader=loader))
        assert run(torch.ones(1), mask=torch.ones(1)).item() == 2.0


def test_child_spec_agrees_with_the_children() -> None:
    """``child_spec`` returns the same children torch's own ``children()`` lists."""
    spec = _in_spec()
    assert [child_spec(spec, i) for i in range(spec.num_children)] == list(spec.children())
