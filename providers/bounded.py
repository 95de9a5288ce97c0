"""One bounded cache shape for the adapters' in-memory state: newest in, oldest out. No Django.

A plain dict keeps insertion order, so the first key is the oldest. Not thread-safe: a caller
that shares the dict between threads holds its own lock around every call.
"""

from __future__ import annotations


def put_bounded[K, V](cache: dict[K, V], key: K, value: V, maxsize: int) -> None:
    """Set cache[key] as the newest entry, then drop the oldest until at most maxsize remain."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > maxsize:
        del cache[next(iter(cache))]
