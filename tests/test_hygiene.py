"""Hygiene: the core (everything but tui/) imports without textual (harlequin's import-hygiene
test), and docstrings and comments name only modules that exist."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

CORE = [
    "perspect",
    "perspect.api",
    "perspect.cli",
    "perspect.core.datasets.metrics",
    "perspect.core.datasets.reference_rows",
    "perspect.core.datasets.perspectrum",
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


# -- docstrings and comments name only modules that exist ---------------------------------------
ROOT = Path(__file__).resolve().parent.parent
# where each installed package lies in the repository (pyproject.toml's package-dir)
FOLDERS = {
    "perspect": ROOT / "perspect",
    "perspect.indexer": ROOT / "indexer",
    "perspect.retriever": ROOT / "retriever",
    "perspect.reranker": ROOT / "reranker",
    "perspect.tui": ROOT / "tui",
    "perspect.models": ROOT / "models",
}
SCANNED = ("perspect", "indexer", "retriever", "reranker", "tui", "tests", "bench")
SHORT = ("core", "pipeline", "lab", "serve", "cli", "indexer", "retriever", "reranker", "tui")
# a dotted name, `perspect.core.model.bundle` or the short `indexer.links` of a docstring below
# `perspect`; not one glued to a path, nor a format tag (`perspect.result/1`) or a file
# (`perspect.tcss`)
DOTTED = re.compile(
    rf"(?<![\w./-])(?:perspect|{'|'.join(SHORT)})(?:\.[A-Za-z_]\w*)+(?![\w/-]|\.\w)"
)
FILE = re.compile(
    r"(?<![\w./-])(?:perspect|indexer|retriever|reranker|tui|tests|bench)/[\w/]+\.py\b"
)
FILE_SUFFIXES = {"tcss", "py", "json", "md", "toml", "txt", "log", "onnx", "safetensors"}


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python file."""
    src = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                yield node.body[0].lineno, doc


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """A body's statements, those under `if TYPE_CHECKING:` or `try:` included."""
    out = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If | ast.Try):
            out += _statements(node.body)
    return out


def _defines(path: Path, names: list[str]) -> bool:
    """Whether module `path` defines names[0] at its top level (and, for a class, names[1] in
    its body): `perspect.core.model.bundle.pack`, `perspect.api.Perspect.open`."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    for name in names[:2]:
        found = None
        for node in _statements(body):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                hit = node.name == name
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                hit = any(isinstance(t, ast.Name) and t.id == name for t in targets)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                hit = any((a.asname or a.name.split(".")[0]) == name for a in node.names)
            else:
                hit = False
            if hit:
                found = node
                break
        if found is None:
            return False
        if not isinstance(found, ast.ClassDef):
            return True  # an attribute of a function or a value: not checked further
        body = found.body
    return True


def module_exists(dotted: str) -> bool:
    """`dotted` names a module or package of Perspect, or something a module defines."""
    parts = dotted.split(".")
    if parts[0] != "perspect":
        parts = ["perspect", *parts]
    if parts[-1] in FILE_SUFFIXES:
        return True  # a file name (perspect.tcss), not a module
    cut = max(n for n in range(1, len(parts) + 1) if ".".join(parts[:n]) in FOLDERS)
    folder, rest = FOLDERS[".".join(parts[:cut])], parts[cut:]
    for i, name in enumerate(rest):
        if (folder / name / "__init__.py").is_file():
            folder = folder / name
        elif (folder / f"{name}.py").is_file():
            return i + 1 == len(rest) or _defines(folder / f"{name}.py", rest[i + 1 :])
        else:  # a name the package defines (perspect.Perspect)
            return _defines(folder / "__init__.py", rest[i:])
    return True


def test_docstrings_and_comments_name_only_modules_that_exist():
    """A module that moved leaves no docstring pointing at its old place (issue 43)."""
    sources = [f for top in SCANNED for f in sorted((ROOT / top).rglob("*.py"))]
    missing = []
    for f in sources:
        for line, text in _prose(f):
            for m in DOTTED.finditer(text):
                if not module_exists(m.group(0)):
                    at = line + text.count("\n", 0, m.start())
                    missing.append(f"{f.relative_to(ROOT)}:{at}: {m.group(0)}")
            for m in FILE.finditer(text):
                if not (ROOT / m.group(0)).is_file():
                    at = line + text.count("\n", 0, m.start())
                    missing.append(f"{f.relative_to(ROOT)}:{at}: {m.group(0)}")
    toml = (ROOT / "pyproject.toml").read_text().splitlines()
    for n, row in enumerate(toml, 1):
        comment = row.partition("#")[2]
        names = [m.group(0) for m in DOTTED.finditer(comment) if not module_exists(m.group(0))]
        names += [m.group(0) for m in FILE.finditer(comment) if not (ROOT / m.group(0)).is_file()]
        missing += [f"pyproject.toml:{n}: {x}" for x in names]
    assert not missing, "named but not there:\n" + "\n".join(missing)


def test_the_name_check_tells_a_module_from_a_ghost():
    assert module_exists("perspect.core.model.bundle")
    assert module_exists("perspect.core.model.bundle.pack")
    assert module_exists("perspect.reranker.served.ServedModel.open")
    assert module_exists("indexer.links")
    assert module_exists("perspect.lab.train.pair")
    assert module_exists("perspect.Perspect")
    assert not module_exists("perspect.engine")
    assert not module_exists("indexer.layout")
    assert not module_exists("perspect.core.model.bundle.unpack")
    assert not module_exists("perspect.reranker.served.ServedModel.close")
