"""A generation tune's decisions are the pure session's: its verification may move the pick,
and the pick, its reason and the report's figures follow the verification."""

from __future__ import annotations

from pyrsistent import pmap

from aitune_fp.core.generation import max_tokens_per_s
from aitune_fp.core.generation.choose import candidate_of, pick_of
from aitune_fp.core.generation.records import GenerationResult
from aitune_fp.core.generation.verify import round_sample
from aitune_fp.core.record.derive import RecordEnv, record_of
from aitune_fp.core.report.account import decision_account
from aitune_fp.core.session import SessionPlan, run
from aitune_fp.core.session.commands import Build, Command, Verify
from aitune_fp.core.session.events import Event, Profiled, Timed

ROWS = {
    "hf": GenerationResult("hf", "e", "e", 1, 8, 4, 20.0, 8.0),
    "a": GenerationResult("a", "e", "i", 1, 8, 4, 10.0, 3.0),
    "b": GenerationResult("b", "e", "i", 1, 8, 4, 11.0, 3.1),
}
RUNS = {"a": (12.0, 4.0), "b": (9.0, 2.5), "hf": (20.0, 8.0)}
"""Each participant's (TTFT, ITL) in every verification run: b is now the fastest."""


def _answer(command: Command) -> Event | None:
    """Sweeps answered from ROWS, the verification from RUNS (6 rounds of 4 tokens)."""
    if isinstance(command, Build):
        return Profiled(command.name, candidate_of(ROWS[command.name]), True)
    if isinstance(command, Verify):
        drift = (1.0, 1.01, 0.99, 1.0, 1.02, 0.98)
        samples = {key: tuple(round_sample("tokens/s", *RUNS[b], 4) * k for k in drift)
                   for key, b, _ in command.entries}  # fmt: skip
        return Timed("verify", pmap(samples), 6, "", 0.5)
    return None


def test_a_verification_that_moves_the_pick_moves_the_generator_and_its_figures() -> None:
    """The sweep's pick a loses its paired rounds to b beyond noise: the session selects b,
    the generation pick is b with the verification's line in its reason, and the report's
    selected figure is b's verified tokens/s (batch 1 over its median ms per token)."""
    plan = SessionPlan(max_tokens_per_s, ("a", "b"), "hf", early_stop=False, verify_seconds=1.0)
    session, done = run(plan, _answer)
    pick = pick_of(max_tokens_per_s, done.selection, list(ROWS.values()), "hf")
    assert pick.result.name == "b" and not pick.fell_back and "verification" in pick.reason
    record = record_of(session, RecordEnv("lm", "cpu"))
    account = decision_account(record)
    assert account is not None and account.selected.source == "verification"
    per_token = round_sample("tokens/s", *RUNS["b"], 4)
    assert abs(account.selected.value - 1000.0 / per_token) < 1e-6 * account.selected.value
