"""One reader of text: no module outside ``pmsearch/shared/text`` keeps its own month or weekday
table, stop-word list or stemmer, so that what the answerer writes and what the verifier
judges are read alike."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pmsearch.shared.text import calendar

ROOT = Path(__file__).resolve().parents[3]
TOOLKIT = ROOT / "pmsearch" / "shared" / "text"
CALENDAR_NAMES = frozenset(
    name for names in (*calendar.MONTH_NAMES.values(), *calendar.WEEKDAY_NAMES.values()) for name in names
)
_WORDS = re.compile(r"[^\W\d_]+")


def _modules() -> list[Path]:
    found = [p for part in ("shared", "services", "cli") for p in (ROOT / "pmsearch" / part).rglob("*.py")]
    return sorted(p for p in found if TOOLKIT not in p.parents)


def _strings(tree: ast.AST) -> list[str]:
    """The module's string constants, its docstrings left out (prose names months)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n.value for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    problems = []
    for text in _strings(tree):
        named = {w for w in _WORDS.findall(text.casefold()) if w in CALENDAR_NAMES}
        if len(named) >= 3:
            problems.append(f"a table of month or day names: {sorted(named)[:4]}")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and re.fullmatch(r"_?stems?", node.name):
            problems.append(f"a stemmer: def {node.name}")
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and re.search(r"STOP_?WORDS|^_?STOP$", target.id):
                    problems.append(f"a stop-word list: {target.id}")
    return problems


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_outside_the_toolkit_keeps_its_own_calendar_stop_words_or_stemmer(path: Path) -> None:
    assert _problems(path) == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    module = tmp_path / "private.py"
    module.write_text(
        '_STOP = frozenset("a an the".split())\n'
        'MONTHS = "january february march".split()\n'
        "def stem(word):\n    return word[:5]\n"
    )
    assert len(_problems(module)) == 3
