"""A non-editable install works from another directory and writes nothing into itself.

The repository keeps `indexer/`, `retriever/`, ... at the top; installed, they are
`perspect.indexer`, ... and no generic top-level package reaches site-packages. Paths must not be
derived from the source tree (models written into site-packages was the bug).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PERSPECTIVES, write_json

ROOT = Path(__file__).resolve().parent.parent


def _tree_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(f.relative_to(folder)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    r = subprocess.run([*pip, "--target", str(target), str(ROOT)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return target


@pytest.mark.slow
def test_installs_under_one_namespace(installed):
    tops = {p.name for p in installed.iterdir() if not p.name.endswith((".dist-info", ".egg-info"))}
    assert tops - {"bin"} == {"perspect"}
    for sub in ("indexer", "retriever", "reranker", "tui", "core", "pipeline", "lab", "cli"):
        assert (installed / "perspect" / sub / "__init__.py").is_file(), sub
    assert (installed / "perspect" / "tui" / "perspect.tcss").is_file()


@pytest.mark.slow
def test_build_and_search_from_another_directory(installed, tmp_path):
    work = tmp_path / "elsewhere"
    work.mkdir()
    pool = write_json(work / "pool.json", PERSPECTIVES)
    before = _tree_digest(installed)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PERSPECT_") or k == "PERSPECT_RETRIEVERS"
    }
    env.update(PYTHONPATH=str(installed), XDG_CACHE_HOME=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "perspect.cli"]

    def run(*args: str) -> subprocess.CompletedProcess:
        r = subprocess.run([*cmd, *args], cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        return r

    probe = subprocess.run(
        [sys.executable, "-c", "import perspect, perspect.indexer; print(perspect.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert probe.stdout.strip().startswith(str(installed)), probe.stdout + probe.stderr
    run("index", "build", "--name", "demo", "--perspectives", str(pool), "-q")
    assert (work / "indexes" / "demo").is_dir()  # ./indexes of the working directory
    out = run("search", "animals deserve rights", "--index", "demo", "--retrieval-only", "--json")
    assert '"schema": "perspect.hits/1"' in out.stdout
    assert _tree_digest(installed) == before  # nothing written into the installed package
