"""When a runner that failed validation is built again: the artifact cache's rule.

Rule: a runner served from the artifact cache (``cache == "hit"``, with the entry's key
and a cache folder) that fails validation is evicted and built afresh once, and that fresh
runner's validation is the verdict; a fresh build's failure stands (nothing to evict).
"""

from __future__ import annotations


def rebuilds_after_failed_validation(cache: object, key: object, has_cache: bool) -> bool:
    """Whether a runner that failed validation is evicted and built afresh (module rule).

    >>> rebuilds_after_failed_validation("hit", "abc", True)
    True
    >>> rebuilds_after_failed_validation("stored", "abc", True)
    False
    >>> rebuilds_after_failed_validation("hit", None, True)
    False
    >>> rebuilds_after_failed_validation("hit", "k", False)
    False
    """
    return cache == "hit" and isinstance(key, str) and has_cache
