"""A pytest plugin that fails the run on an unexpected skip (loaded by tests/conftest.py).

Rules: every skip, of a test or of a whole module at collection (``importorskip``), is
judged by its reason (:func:`tests.capabilities.allowed`); once the session ends, any skip
whose reason is not allowed is listed in the terminal summary and the run's exit status
becomes 1, even when every test passed. ``--allow-unexpected-skips`` turns the failure
into the list alone, for an environment that lacks the test extras by design (the GPU
check's minimal one, ``scripts/gpu_check.py``); CI never passes it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.capabilities import allowed

FOUND: list[tuple[str, str]] = []
"""This session's disallowed skips: (node id, reason)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--allow-unexpected-skips``: list disallowed skips without failing the run."""
    parser.addoption("--allow-unexpected-skips", action="store_true",
                     help="list skips whose reason tests/capabilities.py does not allow, "
                          "without failing the run")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Start the session's list of disallowed skips."""
    FOUND.clear()


def skip_reason(report: Any) -> str:
    """The reason of a skipped report (its ``longrepr`` is ``(path, line, "Skipped: why")``)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(text).removeprefix("Skipped: ")


def _judge(report: Any) -> None:
    """Keep ``report`` when it is a skip whose reason is not allowed (an xfail is no skip)."""
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = skip_reason(report)
        if not allowed(reason):
            FOUND.append((report.nodeid, reason))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped at collection is judged like a test's skip."""
    _judge(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test's skip (at setup or in its body) is judged."""
    _judge(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a skip was not allowed (see the module's rules)."""
    quiet = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)  # all skipped: no tests
    if FOUND and not session.config.getoption("--allow-unexpected-skips") and exitstatus in quiet:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """List the disallowed skips, with the allowed reasons' home."""
    if FOUND:
        terminalreporter.section("unexpected skips (tests/capabilities.py lists the allowed)")
        for nodeid, reason in FOUND:
            terminalreporter.write_line(f"{nodeid}: {reason}")
