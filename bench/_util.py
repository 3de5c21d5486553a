"""Small helpers every benchmark shares: percentiles, timing, a plain table, and the
one-JSON-object last line that scripts parse."""

from __future__ import annotations

import json
import math
import time
from typing import Any, Callable, Iterable, Mapping, Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation; nan for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def latency_ms(samples_s: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean in milliseconds of durations given in seconds."""
    ms = [s * 1000.0 for s in samples_s]
    return {
        "p50_ms": round(percentile(ms, 50), 3),
        "p95_ms": round(percentile(ms, 95), 3),
        "mean_ms": round(sum(ms) / len(ms), 3) if ms else math.nan,
        "n": len(ms),
    }


def time_each(fn: Callable[[Any], Any], inputs: Iterable[Any], warmup: int = 0) -> list[float]:
    """Seconds each ``fn(x)`` took; the first ``warmup`` calls are run but not kept."""
    samples = []
    for i, x in enumerate(inputs):
        start = time.perf_counter()
        fn(x)
        if i >= warmup:
            samples.append(time.perf_counter() - start)
    return samples


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Rows as an aligned plain-text table; floats get 3 significant decimals."""
    if not rows:
        return ""
    cols = list(columns or rows[0].keys())

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 1000 else f"{v:.0f}"
        return "" if v is None else str(v)

    table = [cols] + [[cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(cols))]
    lines = ["  ".join(v.rjust(w) for v, w in zip(line, widths)) for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def emit_json(result: Mapping[str, Any]) -> None:
    """Print ``result`` as one JSON line; call it last, scripts read the last line."""
    print(json.dumps(result, sort_keys=True, default=str), flush=True)
