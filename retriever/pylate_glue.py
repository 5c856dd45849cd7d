"""PyLate and its Stanford PLAID code as Perspect needs them: loaded once, lightly and quietly.

Why a module of its own: these are workarounds around a library, not the index format
(retriever/colbert.py). PyLate's `pylate.indexes` package imports transformers, datasets and
pandas (2.9 s of a cold start) that reading a PLAID index never touches, so the searcher is
imported without it (`stanford`); the Stanford code prints progress on stdout, which
`perspect search --json` keeps for JSON, and raw tqdm bars between Perspect's rich ones, so both
are muted (`quiet`, `silence_build`); its C++ kernels are compiled once into the project, on a
second thread while a build encodes (retriever/plaid_kernels.py loads them).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path

from perspect.core import paths
from perspect.core.errors import ModelError
from perspect.core.model import bundle
from perspect.retriever import onnx_query, plaid_kernels

_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


def quiet():
    """The stanford PLAID code prints its progress to stdout; keep stdout for our output
    (`perspect search --json` must print JSON only) and drop that chatter."""
    import io

    return contextlib.redirect_stdout(io.StringIO())


def default_model() -> Path:
    """`$PERSPECT_COLBERT_MODEL`, else the model `perspect train --task colbert` writes."""
    return paths.colbert_model()


def setup_torch_extensions() -> None:
    """Compile PLAID's C++ kernels into the project, once, not into a shared user cache."""
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(paths.torch_extensions()))


_KERNELS: threading.Thread | None = None


def compile_kernels_in_background() -> None:
    """Start compiling PLAID's C++ kernels (when missing) on a second thread: a build that
    creates a ColBERT index needs them by its end, and encoding needs the CPU less than a
    compiler on one core. A failure here is left to the code that needs them (a pool small
    enough for exact scoring never does)."""
    global _KERNELS
    with _LOCK:
        if _KERNELS is None and not plaid_kernels.built():
            _KERNELS = threading.Thread(target=_compile_kernels, name="perspect-plaid-kernels")
            _KERNELS.start()


def wait_for_kernels() -> None:
    if _KERNELS is not None:
        _KERNELS.join()


def build_kernels() -> Path:
    """PLAID's C++ kernels for this configuration, compiled now if missing (a search never
    compiles them: `perspect models prepare` and index builds do)."""
    return plaid_kernels.ensure()


def _compile_kernels() -> None:
    with contextlib.suppress(Exception):
        plaid_kernels.ensure()


def model_fingerprint(folder: str | Path) -> str:
    """Cheap identity of a saved model: size and mtime of its weight files, plus its manifest."""
    folder = Path(folder)
    parts = []
    for f in sorted(folder.rglob("*")):
        if f.is_file() and f.suffix in (".safetensors", ".bin", ".json"):
            parts.append(f"{f.relative_to(folder)}:{f.stat().st_size}")

    man = folder / "perspect_manifest.json"
    if man.is_file():
        parts.append(man.read_text())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def query_graph(model: str | Path) -> bool:
    """Make the ONNX graph a search encodes queries of `model` with (`perspect models prepare`);
    True when the queries are served on ONNX Runtime, False on PyTorch."""
    path = str(Path(model).resolve())
    return onnx_query.session(load_colbert(path), path, model_fingerprint(path)) is not None


def load_colbert(name: str | Path, query_maxlen: int = 32, doc_maxlen: int = 256):
    """Load (once per process) a PyLate ColBERT model: a bundle entry, a local folder, or a hub id
    when online."""
    if Path(name).is_dir():
        name = bundle.resolve(name)  # a bundle entry, checked; refused without its bundle.json
    local = Path(name).exists()
    key = f"{Path(name).resolve() if local else name}|{query_maxlen}|{doc_maxlen}"
    with _LOCK:
        if key not in _MODELS:
            if not local and str(name).startswith(("/", ".", "~")):
                raise ModelError(
                    f"no ColBERT model at {name}",
                    hint="train one: perspect train --task colbert (or use --retrievers bm25)",
                )
            from pylate import models
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            try:
                _MODELS[key] = models.ColBERT(
                    model_name_or_path=str(name),
                    device="cpu",
                    query_length=query_maxlen,
                    document_length=doc_maxlen,
                )
            except OSError as e:
                raise ModelError(
                    f"cannot load ColBERT model {name}: {str(e).splitlines()[0]}",
                    hint="pass a local model folder, or go online for a hub id",
                ) from None
        return _MODELS[key]


def stanford():
    """PyLate's copy of the Stanford PLAID searcher and its config class, imported without
    running `pylate/indexes/__init__.py`: that file imports every index PyLate has, and through
    them transformers, datasets and pandas (2.9 s measured) that reading a PLAID index never
    touches. A stand-in package object serves the import and is dropped right after, so a later
    `import pylate.indexes` (an index build) loads the real one and finds these modules loaded."""
    import importlib
    import importlib.util
    import sys
    import types

    name = "pylate.indexes"
    with _LOCK:
        if name not in sys.modules:
            spec = importlib.util.find_spec(name)
            stub = types.ModuleType(name)
            stub.__path__ = list(spec.submodule_search_locations or [])
            sys.modules[name] = stub
            try:
                importlib.import_module(f"{name}.stanford_nlp.searcher")
                importlib.import_module(f"{name}.stanford_nlp.infra.config")
            finally:
                if sys.modules.get(name) is stub:
                    del sys.modules[name]
                parent = sys.modules.get("pylate")
                if parent is not None and getattr(parent, "indexes", None) is stub:
                    delattr(parent, "indexes")
        else:  # the real package is loaded (an index build ran in this process)
            importlib.import_module(f"{name}.stanford_nlp.searcher")
            importlib.import_module(f"{name}.stanford_nlp.infra.config")
        _silence(f"{name}.stanford_nlp")
    searcher = sys.modules[f"{name}.stanford_nlp.searcher"]
    config = sys.modules[f"{name}.stanford_nlp.infra.config"]
    return searcher.Searcher, config.ColBERTConfig


def _silence(package: str) -> None:
    """Mute the Stanford code's chatter for good: `print_message` lines on stdout (which
    `perspect search --json` keeps for JSON) and the index loader's progress bar on stderr.
    Muted once at import, not around each call: swapping `sys.stdout` is process-wide, and a
    warm-up thread swapping it beside a search thread could leave it swapped."""
    import sys
    import types

    def silent(*args, **kwargs) -> str:
        return ""

    for name, module in list(sys.modules.items()):
        if name.startswith(package) and hasattr(module, "print_message"):
            module.print_message = silent

    def passthrough(it=None, *args, **kwargs):
        return it

    for name, module in list(sys.modules.items()):
        # every progress bar of the Stanford code, on the index loader and on the build (the
        # collection indexer passes `disable=False` itself, so TQDM_DISABLE cannot reach it):
        # raw tqdm lines between Perspect's rich bars
        bar = getattr(module, "tqdm", None) if name.startswith(package) else None
        if isinstance(bar, types.ModuleType):
            module.tqdm = types.SimpleNamespace(tqdm=passthrough)
        elif bar is not None and callable(bar):
            module.tqdm = passthrough


def silence_build() -> None:
    """The build's bars live in modules PyLate imports only when it indexes: import them now
    and mute them (`_silence`) before `add_documents` runs."""
    import importlib

    package = "pylate.indexes.stanford_nlp"
    for mod in (
        "indexing.collection_indexer",
        "indexing.utils",
        "indexing.codecs.residual_embeddings",
        "utils.coalesce",
        "search.index_loader",
    ):
        with contextlib.suppress(ImportError):  # another PyLate: its bars show, nothing breaks
            importlib.import_module(f"{package}.{mod}")
    _silence(package)
