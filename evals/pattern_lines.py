"""Count the lines of English question patterns at a commit: module-level regexes and
word lists holding English words, in the modules that read questions and judge answers
by them (the answerer, the verifier, and the toolkit's question and answer-shape
readers, or the older ``pmsearch/shared/asked.py``). Run from the repository root:

    .venv/bin/python evals/pattern_lines.py [REV ...]

Prints one row per module and a total per revision and, last, one JSON line.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

QUESTION_MODULES = ("pmsearch/shared/asked.py", "pmsearch/shared/text/question.py", "pmsearch/shared/text/shapes.py")
_ENGLISH = re.compile(r"\b(?:the|what|how|when|which|who|is|are|did|does|invoice|much|please|yes|no|and|of)\b", re.I)


def _counted(path: str) -> bool:
    return path.endswith(".py") and (
        path.startswith(("pmsearch/services/verifier/", "pmsearch/services/answerer/")) or path in QUESTION_MODULES
    )


def _pattern_lines(source: str) -> int:
    lines = 0
    for node in ast.parse(source).body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if value is None:
            continue
        text = ast.get_source_segment(source, value) or ""
        strings = [c.value for c in ast.walk(value) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        listed = "re.compile" in text or "frozenset" in text or "split()" in text
        if any(_ENGLISH.search(s) for s in strings) and (listed or isinstance(value, ast.Tuple | ast.List | ast.Dict)):
            lines += node.end_lineno - node.lineno + 1
    return lines


def count(rev: str) -> dict[str, int]:
    files = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev], capture_output=True, text=True, check=True)
    out = {}
    for path in filter(_counted, files.stdout.split()):
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True)
        if lines := _pattern_lines(shown.stdout):
            out[path] = lines
    return out


def main(revs: list[str]) -> None:
    totals = {}
    for rev in revs or ["HEAD"]:
        counts = count(rev)
        print(f"{rev}\n| module | lines |\n|---|---|")
        for path, lines in sorted(counts.items()):
            print(f"| {path} | {lines} |")
        totals[rev] = sum(counts.values())
        print(f"| total | {totals[rev]} |\n")
    print(json.dumps(totals))


if __name__ == "__main__":
    main(sys.argv[1:])
