"""Short modules: a product module over LIMIT lines says in its docstring why it is one module.

The house rule (issue 30): one module per concern and command group; a long one must state its
reason where a reader opens it, in a docstring line starting with `Why one module:`.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 450
PRODUCT = ("perspect", "indexer", "retriever", "reranker", "tui")


def test_long_modules_say_why():
    long = []
    for top in PRODUCT:
        for f in sorted((ROOT / top).rglob("*.py")):
            text = f.read_text(encoding="utf-8")
            if text.count("\n") <= LIMIT:
                continue
            doc = ast.get_docstring(ast.parse(text)) or ""
            if "Why one module:" not in doc:
                long.append(f"{f.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not long, f"over {LIMIT} lines without 'Why one module:' in the docstring: {long}"
