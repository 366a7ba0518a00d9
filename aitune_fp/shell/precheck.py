"""The eager check before anything is built; it lives in :mod:`aitune_fp.effects.precheck`
(an isolation worker runs it too) and is re-exported here for the shell."""

from aitune_fp.effects.precheck import eager_check

__all__ = ["eager_check"]
