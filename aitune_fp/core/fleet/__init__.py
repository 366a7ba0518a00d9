"""Fleet plans as data: models × targets × strategies, their jobs, resume rules, summary.

Pure: parsing TOML text, validation, expansion, job ids, the index, resume decisions and
the summary; no I/O, no clock. The shell (:mod:`aitune_fp.shell.fleet`) runs the jobs.
"""

from aitune_fp.core.fleet.expand import collapse, expand
from aitune_fp.core.fleet.plan import (
    DEMO_NAMES,
    STATUSES,
    Job,
    ModelEntry,
    Plan,
    Settings,
    TargetEntry,
    entry_key,
    safe_name,
)
from aitune_fp.core.fleet.plan_parse import PlanError, parse_plan
from aitune_fp.core.fleet.plan_render import render_plan

__all__ = [
    "DEMO_NAMES",
    "STATUSES",
    "Job",
    "ModelEntry",
    "Plan",
    "PlanError",
    "Settings",
    "TargetEntry",
    "collapse",
    "entry_key",
    "expand",
    "parse_plan",
    "render_plan",
    "safe_name",
]
