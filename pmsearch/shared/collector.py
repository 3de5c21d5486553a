"""The garbage collector's settings for a long-running stage process.

Measured on a loaded stack (``bench.load``, a ``gc.callbacks`` timer in every process):
Python's cyclic collector took 7-8 % of each stage's CPU, and a full collection paused a
stage for 30-57 ms, most of it walking the 55-110 k objects that imports and start-up
built and that live as long as the process. A run's own objects are freed by reference
counting the moment it ends; the collector only has to find cycles among them.
"""

from __future__ import annotations

import gc

# Young objects a collection waits for (Python's default is 700). A run allocates tens
# of thousands of short-lived containers, so the default collects several times a run
# and promotes objects that would have died a moment later.
YOUNG_THRESHOLD = 20_000
OLDER_THRESHOLDS = (20, 20)


def settle_after_startup() -> None:
    """Collect once, move everything start-up built out of the collector's sight, and
    collect young objects less often. Call once the process is serving."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)


__all__ = ["settle_after_startup"]
