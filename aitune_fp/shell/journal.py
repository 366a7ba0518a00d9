"""Write a run record so that the file on disk is always a whole, valid record.

Rules: the record goes to a temporary file next to the target and is renamed over it
(:mod:`aitune_fp.effects.atomic`), so a crash, a signal or a full disk leaves the previous
record intact; a failed write is a warning (the run goes on, the record is still returned
in memory), never an exception.
"""

from __future__ import annotations

import logging
from pathlib import Path

from aitune_fp.core.record.run_record import RunRecord, dumps
from aitune_fp.effects.atomic import write_text

log = logging.getLogger("aitune_fp")


def write_record(record: RunRecord, path: Path) -> bool:
    """Write ``record`` to ``path`` atomically; ``False`` (and a warning) if it failed.

    >>> import tempfile
    >>> from aitune_fp.core.record.run_record import loads
    >>> record = RunRecord("mlp", "cpu", {"strategy": "max"}, None, (), None, None, {}, {}, None)
    >>> path = Path(tempfile.mkdtemp()) / "run.json"
    >>> write_record(record, path), loads(path.read_text()) == record
    (True, True)
    >>> write_record(record, path / "inside-a-file.json"), loads(path.read_text()) == record
    (False, True)
    """
    try:
        write_text(path, dumps(record))
        return True
    except OSError as error:
        log.warning("could not write %s: %s (the previous file is kept)", path, error)
        return False
