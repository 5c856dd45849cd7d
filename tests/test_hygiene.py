"""The core (everything but tui/) must import without textual: harlequin's import-hygiene test."""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "perspect",
    "perspect.api",
    "perspect.cli",
    "perspect.evaluation",
    "perspect.reference_rows",
    "perspect.perspectrum",
    "indexer.indexer",
    "indexer.news",
    "retriever.searcher",
    "retriever.bm25",
    "retriever.packaged",
    "reranker",
]


def test_core_never_imports_textual():
    code = (
        "import sys\n"
        f"for m in {CORE!r}: __import__(m)\n"
        "from perspect import Perspect\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""
