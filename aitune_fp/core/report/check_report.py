"""A check's outcome for CI: JUnit XML and JSON (pure).

Rules: :func:`check_json` holds every figure the verdict used (the recorded and current
samples too, so it can be re-judged offline) and the one-line verdict;
:func:`junit_xml` is one test suite with one test case named after the pick, a
``<failure>`` carrying the verdict when the check failed (what CI systems read as a red
test), the figures in ``<system-out>``.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape, quoteattr

from aitune_fp.core.verification.gate import CheckResult, verdict_line


def check_json(result: CheckResult) -> dict[str, Any]:
    """The check as a JSON-able dict.

    >>> from aitune_fp.core.verification.gate import Figures, judge_check
    >>> doc = check_json(judge_check(Figures("ort", 1, (1.0,) * 4), (1.0,) * 4))
    >>> doc["passed"], doc["speed"], doc["speedup"]["point"]
    (True, 'equivalent', 1.0)
    """
    return {
        "passed": result.passed,
        "verdict": verdict_line(result),
        "pick": result.pick,
        "batch_size": result.batch_size,
        "speed": result.speed,
        "speedup": {"point": result.point, "low": result.low, "high": result.high},
        "margin": result.margin,
        "correct": result.wrong is None,
        "wrong": result.wrong,
        "recorded_ms": list(result.recorded_ms),
        "now_ms": list(result.now_ms),
    }


def junit_xml(result: CheckResult, suite: str = "aitune-fp check") -> str:
    """The check as a JUnit XML document (one suite, one case).

    >>> from aitune_fp.core.verification.gate import Figures, judge_check
    >>> xml = junit_xml(judge_check(Figures("ort", 1, (1.0,) * 4), (2.0,) * 4))
    >>> '<testsuite name="aitune-fp check" tests="1" failures="1"' in xml, "<failure" in xml
    (True, True)
    """
    line = verdict_line(result)
    failed = 0 if result.passed else 1
    failure = "" if result.passed else f"    <failure message={quoteattr(line)}/>\n"
    name = quoteattr(f"{result.pick} at batch {result.batch_size}")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuite name={quoteattr(suite)} tests="1" failures="{failed}" errors="0">\n'
        f'  <testcase classname="aitune_fp.check" name={name}>\n'
        f"{failure}"
        f"    <system-out>{escape(line)}</system-out>\n"
        "  </testcase>\n"
        "</testsuite>\n"
    )
