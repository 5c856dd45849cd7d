"""The floors (pyproject.toml's import-linter contract) and no import cycle at all.

Checked on the *installed* layout: the repository keeps `indexer/`, `retriever/`, `reranker/` and
`tui/` at the top, but they install as `perspect.indexer`, ... (setuptools package-dir), and
grimp reads packages from disk, so the test lays the files out as a wheel would, from the
package-dir mapping in pyproject.toml itself.
"""

from __future__ import annotations

import json
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
    mapped = conf["package-dir"]
    for pkg in conf["packages"]:
        # the longest mapped prefix: perspect.lab.train lies in perspect/lab/train
        base = max((m for m in mapped if pkg == m or pkg.startswith(m + ".")), key=len)
        src = ROOT / mapped[base] / pkg.removeprefix(base).lstrip(".").replace(".", "/")
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
    assert "4 kept, 0 broken" in r.stdout


def _graph(layout: Path) -> dict:
    """The import graph of `layout`, built in a fresh interpreter (tests/import_graph.py), so
    that what this process imported before, whatever the test order, cannot change it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [sys.executable, "-P", str(ROOT / "tests" / "import_graph.py"), str(layout)],
        cwd=layout,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    graph = json.loads(r.stdout)
    # the graph was read from the layout, whole: every laid-out module is in it
    assert graph["found_at"] == [str(layout / "perspect")], graph["found_at"]
    laid_out = {
        ".".join(p.relative_to(layout).with_suffix("").parts).removesuffix(".__init__")
        for p in layout.rglob("*.py")
    }
    assert laid_out == set(graph["modules"]), laid_out ^ set(graph["modules"])
    return graph


def test_no_import_cycle_even_inside_functions(installed_layout):
    """grimp records every import statement, those inside functions included."""
    cycles = _graph(installed_layout)["cycles"]
    assert not cycles, f"import cycles: {cycles}"


def test_the_cycle_check_finds_a_planted_cycle(installed_layout, tmp_path):
    """The check must fail on a cycle through the mapped subpackages, the kind that once landed
    unnoticed, even where this process has the editable `perspect` imported already."""
    import perspect.api  # noqa: F401  (as a full test run would have it)

    planted = tmp_path / "layout"
    shutil.copytree(installed_layout, planted)
    (planted / "perspect/retriever/planted.py").write_text(
        "def late():\n    from perspect.indexer import planted_back  # noqa: F401\n"
    )
    (planted / "perspect/indexer/planted_back.py").write_text(
        "from perspect.retriever import planted  # noqa: F401\n"
    )
    cycles = _graph(planted)["cycles"]
    assert ["perspect.indexer.planted_back", "perspect.retriever.planted"] in cycles, cycles
