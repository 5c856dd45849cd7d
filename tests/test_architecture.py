"""The floors (pyproject.toml's import-linter contract) and no import cycle at all.

Checked on the *installed* layout: the repository keeps `indexer/`, `retriever/`, `reranker/` and
`tui/` at the top, but they install as `perspect.indexer`, ... (setuptools package-dir), and
grimp reads packages from disk, so the test lays the files out as a wheel would, from the
package-dir mapping in pyproject.toml itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed_layout(tmp_path_factory) -> Path:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    out = tmp_path_factory.mktemp("layout")
    for pkg in conf["packages"]:
        src = ROOT / conf["package-dir"].get(pkg, pkg.replace(".", "/"))
        if pkg not in conf["package-dir"]:  # a subpackage of a mapped one
            parent, _, leaf = pkg.rpartition(".")
            src = ROOT / conf["package-dir"][parent] / leaf
        dst = out / pkg.replace(".", "/")
        dst.mkdir(parents=True, exist_ok=True)
        for f in src.glob("*.py"):
            shutil.copy2(f, dst / f.name)
    return out


def test_every_package_is_listed(installed_layout):
    """A new folder with modules must be listed in pyproject.toml, or it would not install."""
    copied = {p.relative_to(installed_layout) for p in installed_layout.rglob("*.py")}
    for top in ("perspect", "indexer", "retriever", "reranker", "tui"):
        for f in (ROOT / top).rglob("*.py"):
            rel = f.relative_to(ROOT)
            want = rel if top == "perspect" else Path("perspect") / rel
            assert want in copied, f"{rel} would not be installed (add its package to pyproject)"


def test_floors_contract(installed_layout):
    env = {**os.environ, "PYTHONPATH": str(installed_layout)}
    lint = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=installed_layout,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 kept, 0 broken" in r.stdout


def test_no_import_cycle_even_inside_functions(installed_layout, monkeypatch):
    """grimp records every import statement, those inside functions included."""
    import grimp

    monkeypatch.syspath_prepend(str(installed_layout))
    graph = grimp.build_graph("perspect", cache_dir=None)
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    cycles = [c for c in _strongly_connected(edges) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph has a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    out.append(comp)
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(edges.get(w, ())))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out
