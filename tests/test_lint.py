"""The whole tree passes ``ruff check`` with the configuration in pyproject.toml, and no
module reaches into another package's private names."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("pmsearch", "bench", "evals", "tests")


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _package_of(dotted: str) -> str | None:
    """The package holding module ``dotted`` (a package holds itself), None for a name
    that is no module of this tree (a class, a function)."""
    path = ROOT.joinpath(*dotted.split("."))
    if path.with_suffix(".py").is_file():
        return dotted.rpartition(".")[0]
    if (path / "__init__.py").is_file() or path.is_dir():
        return dotted
    return None


def private_names_used_across_packages(source: str, here: str) -> list[str]:
    """``from x import _name`` and ``module._name`` in ``source`` (a module of package
    ``here``) where ``x`` or ``module`` lives in another package."""
    tree = ast.parse(source)
    modules: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in TREES:
                continue
            for alias in node.names:
                if _private(alias.name) and _package_of(node.module) != here:
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name):
            target = modules.get(node.value.id)
            if target is None or _package_of(target) is None:
                continue
            owner = target.rpartition(".")[0] if ROOT.joinpath(*target.split(".")).with_suffix(".py").is_file() else target
            if owner != here:
                found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_another_packages_private_names():
    found = []
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            here = ".".join(path.relative_to(ROOT).parts[:-1])
            found += [f"{path.relative_to(ROOT)}:{hit}" for hit in private_names_used_across_packages(path.read_text(), here)]
    assert found == []


def test_the_private_name_check_finds_a_reach_across_packages_and_allows_one_within():
    source = (
        "from pmsearch.shared.text import figures\n"
        "from pmsearch.shared.text.quotes import _PAIRS\n"
        "figures._hidden()\n"
    )
    assert private_names_used_across_packages(source, "tests.shared") == [
        "2: from pmsearch.shared.text.quotes import _PAIRS", "3: figures._hidden"]
    assert private_names_used_across_packages(source, "pmsearch.shared.text") == []
