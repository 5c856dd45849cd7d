"""Short modules: none over HARD lines, and one over LIMIT says in its docstring why it is one.

The house rule (issues 30 and 43): one module per concern and command group; a long one must state
its reason where a reader opens it, in a docstring line starting with `Why one module:`, and no
reason carries a module past HARD lines (split it: e.g. retriever/pylate_glue.py out of
retriever/colbert.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 450
HARD = 600
PRODUCT = ("perspect", "indexer", "retriever", "reranker", "tui")


def _modules():
    for top in PRODUCT:
        for f in sorted((ROOT / top).rglob("*.py")):
            text = f.read_text(encoding="utf-8")
            yield f, text, text.count("\n")


def test_long_modules_say_why():
    long = []
    for f, text, n in _modules():
        if n <= LIMIT:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "Why one module:" not in doc:
            long.append(f"{f.relative_to(ROOT)} ({n} lines)")
    assert not long, f"over {LIMIT} lines without 'Why one module:' in the docstring: {long}"


def test_no_module_over_hard_limit():
    over = [f"{f.relative_to(ROOT)} ({n} lines)" for f, _, n in _modules() if n > HARD]
    assert not over, f"over {HARD} lines (split by concern): {over}"
