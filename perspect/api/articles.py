"""Article comparison in the API: `compare` one pair, `Comparer` keeps its models loaded for a
server's many pairs, `evaluate_claimdiff` scores the comparator (perspect.pipeline.compare is the
logic; this is the typed door, re-exported by perspect.api)."""

from __future__ import annotations

import threading
from pathlib import Path

from perspect.api.loads import MODEL_LOADS
from perspect.core import paths
from perspect.core.model import bundle
from perspect.reranker import factory


def compare(
    a: str | Path,
    b: str | Path,
    *,
    config=None,
    model_dir: str | Path | None = None,
):
    """Article A against article B, sentence by sentence (perspect.pipeline.compare): where A
    strengthens B (agreement), where it weakens B (dispute), with the words that say so."""
    return Comparer(model_dir, config).compare(a, b)


class Comparer:
    """`compare` with its models loaded once (a server compares many pairs): articles given as
    (title, text) pairs or as files."""

    def __init__(self, model_dir: str | Path | None = None, config=None):
        self._model_dir, self._config = model_dir, config
        self._models = None
        self._lock = threading.Lock()

    def _loaded(self):
        from perspect.pipeline.compare import SentenceEncoder

        if self._models is not None:
            return self._models
        with MODEL_LOADS, self._lock:
            if self._models is None:
                folder = self._model_dir or paths.comparator_model()
                comparator = factory.load(
                    ["comparator"], factory.TORCH, entries={"comparator": folder}
                ).comparator
                dense_dir = paths.dense_model_dir()
                if (dense_dir / bundle.MANIFEST).is_file():
                    enc_dir = bundle.resolve(dense_dir)
                else:
                    enc_dir = Path(paths.resolve_base(None))
                # the relation model (its inference and equivalence heads read the aligned
                # sentences) where the bundle has one beside a pair model naming another trunk,
                # else the stance trunk the pair model names, on ONNX Runtime, or None
                got = factory.load(["trunk", "relation"])
                trunk = (got.relation or got.trunk) if got.trunk is not None else None
                self._models = (comparator, SentenceEncoder(enc_dir), trunk)
            return self._models

    def compare(self, a: tuple[str, str] | str | Path, b: tuple[str, str] | str | Path):
        from perspect.pipeline.compare import Article, compare_articles

        def article(x, label: str) -> Article:
            if isinstance(x, tuple):
                return Article.from_text(x[0], x[1], label)
            return Article.read(x)

        art_a, art_b = article(a, "article a"), article(b, "article b")
        comparator, encoder, stance = self._loaded()
        return compare_articles(art_a, art_b, comparator, encoder, self._config, stance)


def evaluate_claimdiff(
    data: str | Path = Path("data") / "claimdiff",
    split: str = "dev",
    model_dir: str | Path | None = None,
):
    """ClaimDiff scores of the comparator on `split` and on its document-like counterpart."""
    from perspect.lab.claimdiff import evaluate_claimdiff as run

    return run(model_dir or paths.comparator_model(), data, split)
