"""The core (everything but tui/) must import without textual: harlequin's import-hygiene test."""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "perspect",
    "perspect.api",
    "perspect.cli",
    "perspect.core.metrics",
    "perspect.core.reference_rows",
    "perspect.core.perspectrum",
    "perspect.indexer.indexer",
    "perspect.indexer.news",
    "perspect.retriever.searcher",
    "perspect.retriever.bm25",
    "perspect.reranker",
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
