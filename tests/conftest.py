"""Shared pytest configuration: Hypothesis profiles, and the collector's frozen heap."""

from __future__ import annotations

import gc
import os
import tempfile

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.skip_gate"]  # a skip whose reason tests/capabilities.py lists not fails

# No test starts this user's tuning service by itself (a first `tune` would): the suite
# runs beside other people's tunes; a test that wants a service starts one in a private
# temporary folder (tests/cli/test_service.py) and stops it at teardown.
os.environ["AITUNE_FP_SERVICE"] = "0"
os.environ.setdefault("AITUNE_FP_CACHE", tempfile.mkdtemp(prefix="aitune_fp_tests_"))
# the suite's default cache (decisions, artifacts) is its own, never the user's

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=30, deadline=None, print_blob=True)
settings.register_profile("thorough", max_examples=1000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what is alive once every test is collected (torch, transformers, ray and the
    test modules: a few hundred thousand objects that live as long as the session).

    The tuner runs a full ``gc.collect()`` before each in-process memory reading and after
    every drive; on this heap each took ~0.3-1 s. Frozen objects are never collected, so
    collections walk only what the tests create; garbage is collected first, so nothing
    collectable is frozen, and the worker processes (fresh heaps) are unaffected.
    """
    gc.collect()
    gc.freeze()
