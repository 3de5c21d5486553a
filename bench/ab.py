"""A/B: one benchmark run in turns on this checkout and on another commit, in one run.

Two runs of the same code minutes apart can differ by a quarter on a shared two-core
machine (seen: CPU a run 67 and 84 ms, same head), more than most changes are worth. So
a change is measured against its base in turns, base then change, ``--rounds`` times,
and judged by the median of the per-round ratios. The base is a ``git worktree`` of
``--against``; a benchmark run with the worktree as its working directory imports the
worktree's code (``python -m`` puts the working directory first on the path), so its
stack runs that code too. The benchmark's own arguments follow ``--``; each run's last
line (its JSON figures) is read, and the figures compared are ``--figures`` (dotted
paths into it; ``*`` matches every key at that level).

A change may also be a setting rather than a commit: with ``--change-args`` both sides
run this checkout (unless ``--against`` names a base), the change with those arguments
added to the benchmark's.

    python -m bench.ab --against HEAD~1 -- bench.load --levels 10,50
    python -m bench.ab --against main --figures 'sizes.*.hybrid.p95_ms' -- bench.search --sizes 20000
    python -m bench.ab --change-args '--redis-cluster --stream-partitions 3' -- bench.load --levels 10,50
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._util import emit_json, format_table

ROOT = Path(__file__).resolve().parent.parent
# What bench.load's comparison looks at when no --figures are given.
LOAD_FIGURES = ["levels.*.overhead.p95_ms", "levels.*.first_evidence.p95_ms", "levels.*.stack_cpu_ms_per_run"]


def figures(data: Any, path: str, prefix: str = "") -> dict[str, float]:
    """The numbers at ``path`` (dotted, ``*`` for every key) in ``data``, by full path."""
    head, _, rest = path.partition(".")
    if not isinstance(data, dict):
        return {}
    keys = list(data) if head == "*" else [head] if head in data else []
    out: dict[str, float] = {}
    for key in keys:
        where = f"{prefix}{key}"
        if rest:
            out |= figures(data[key], rest, where + ".")
        elif isinstance(data[key], (int, float)) and not isinstance(data[key], bool):
            out[where] = float(data[key])
    return out


def with_stack_cpu(data: dict[str, Any]) -> dict[str, Any]:
    """bench.load's figures plus, per level, the CPU a run of the stack's own processes
    (the client and the scripted model left out)."""
    for level in data.get("levels", {}).values():
        cpu = level.get("cpu_ms_per_run", {})
        level["stack_cpu_ms_per_run"] = round(sum(v for k, v in cpu.items() if k not in ("client", "model")), 1)
    return data


def run_once(cwd: Path, bench: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", *bench], cwd=cwd, capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    try:
        return with_stack_cpu(json.loads(lines[-1]))
    except (IndexError, json.JSONDecodeError):
        sys.exit(f"bench.ab: {' '.join(bench)} in {cwd} printed no JSON last line (exit {proc.returncode}): "
                 f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="the base: a commit, branch or tag (default: this checkout)")
    parser.add_argument("--change-args", default="", help="arguments the change adds to the benchmark's")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--figures", action="append", help="dotted path into the JSON line (repeatable)")
    parser.add_argument("bench", nargs=argparse.REMAINDER, help="-- then the benchmark module and its arguments")
    args = parser.parse_args()
    bench = args.bench[1:] if args.bench[:1] == ["--"] else args.bench
    if not bench:
        parser.error("name the benchmark after --, e.g. -- bench.load --levels 10,50")
    if not args.against and not args.change_args:
        parser.error("name a base (--against) or what the change adds (--change-args)")
    paths = args.figures or LOAD_FIGURES
    change_bench = bench + shlex.split(args.change_args)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base" if args.against else ROOT
        if args.against:
            subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), args.against], cwd=ROOT, check=True)
        try:
            rounds = []
            for i in range(args.rounds):
                pair = {}
                for side, cwd, command in (("base", base, bench), ("change", ROOT, change_bench)):
                    print(f"round {i + 1}/{args.rounds}: {side}", file=sys.stderr, flush=True)
                    data = run_once(cwd, command)
                    pair[side] = {k: v for p in paths for k, v in figures(data, p).items()}
                rounds.append(pair)
        finally:
            if args.against:
                subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
    rows, out = [], {}
    for name in sorted(rounds[0]["base"]):
        b = [r["base"][name] for r in rounds if name in r["base"]]
        c = [r["change"][name] for r in rounds if name in r["change"]]
        ratios = [y / x for x, y in zip(b, c) if x]
        ratio = round(statistics.median(ratios), 3) if ratios else None
        rows.append({"figure": name, "base (each round)": " / ".join(f"{x:g}" for x in b),
                     "change (each round)": " / ".join(f"{y:g}" for y in c), "change / base, median": ratio})
        out[name] = {"base": b, "change": c, "ratio_median": ratio}
    change = f"this checkout{' with ' + args.change_args if args.change_args else ''}"
    print(f"{' '.join(bench)}: base {args.against or 'this checkout'}, change = {change}; "
          f"{args.rounds} rounds, base first in each")
    print(format_table(rows))
    emit_json({"bench": "ab", "against": args.against, "change_args": args.change_args, "command": bench,
               "rounds": args.rounds, "figures": out})


if __name__ == "__main__":
    main()
