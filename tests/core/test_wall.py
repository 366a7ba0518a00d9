"""The run's wall account: JSON round trips, old records, and the one-line summary."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitune_fp.core.record.run_record import RunRecord, decode, encode, loads
from aitune_fp.core.record.wall import WallAccount, decode_wall, encode_wall, wall_line

seconds = st.floats(min_value=0.0, max_value=1e4, allow_nan=False)
names = st.sampled_from(("startup", "setup", "max_batch_search", "candidates", "record"))
accounts = st.builds(
    WallAccount, seconds, st.lists(st.tuples(names, seconds), max_size=6).map(tuple), st.booleans()
)


@given(accounts)
def test_wall_account_round_trips_through_json(account: WallAccount) -> None:
    """Any wall account decodes from its encoding to an equal account."""
    assert decode_wall(encode_wall(account)) == account


@given(accounts)
def test_unaccounted_is_the_wall_less_the_stages(account: WallAccount) -> None:
    """The stages plus the unaccounted part always add up to the wall, also when encoded."""
    encoded = encode_wall(account)
    assert encoded is not None
    parts = sum(s["seconds"] for s in encoded["stages"]) + encoded["unaccounted_s"]
    assert abs(parts - account.wall) <= 1e-6 * max(1.0, account.wall)


def test_a_record_without_a_wall_object_reads_as_not_measured() -> None:
    """A run.json written before the wall account existed decodes with ``wall`` None."""
    record = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None)
    data = encode(record)
    del data["wall"]
    assert decode(data).wall is None
    with_wall = RunRecord("m", "cpu", {}, None, (), None, None, {}, {}, None,
                          wall=WallAccount(1.0, (("setup", 0.5),), True))  # fmt: skip
    assert loads(__import__("json").dumps(encode(with_wall))) == with_wall


def test_wall_line_names_every_stage_and_the_unaccounted_share() -> None:
    """The summary line shows every stage in order and the unaccounted seconds and share."""
    line = wall_line(WallAccount(20.0, (("startup", 2.0), ("candidates", 17.0))), [10.0, 5.0])
    assert line is not None
    assert line.index("startup 2.0 s") < line.index("candidates 17.0 s")
    assert "backends 15.0 s, between 2.0 s" in line
    assert line.endswith("unaccounted 1.0 s (5.0 %)")
