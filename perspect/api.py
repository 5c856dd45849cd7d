"""The public Python API.

    from perspect import Perspect
    p = Perspect.open("default")
    p.search("animals should have lawful rights")   # SearchResult: clusters per side, evidence

`search` runs the whole pipeline when trained models are present; without them it degrades to
retrieval (clusters empty, a coverage warning that says how to train). `retrieve` is the plain
top-k of any pool.
"""

from __future__ import annotations

import threading
from pathlib import Path

from perspect.engine import Engine, EngineConfig, ProgressCallback
from perspect.result import Coverage, SearchResult
from perspect.types import HitList, validate_claim
from retriever.searcher import Searcher


class Perspect:
    """A handle on one built index (and the models); cheap to query repeatedly."""

    def __init__(
        self,
        searcher: Searcher,
        model_dir: str | Path | None = None,
        config: EngineConfig | None = None,
    ):
        from perspect.config import default_pair_model

        self._searcher = searcher
        self._model_dir = Path(model_dir) if model_dir else default_pair_model()
        self._config = config
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        name: str = "default",
        home: str | Path | None = None,
        model: str | Path | None = None,
        config: EngineConfig | None = None,
    ) -> Perspect:
        return cls(Searcher(name, home), model, config)

    @property
    def name(self) -> str:
        return self._searcher.name

    @property
    def pools(self) -> dict[str, int]:
        """Item count per pool."""
        return self._searcher.pools

    @property
    def manifest(self) -> dict:
        return self._searcher.manifest

    @property
    def has_models(self) -> bool:
        return (self._model_dir / "manifest.json").is_file()

    def engine(self) -> Engine:
        """The full pipeline; loads the models on first use (raises ModelError if missing)."""
        with self._lock:
            if self._engine is None:
                from reranker.model import PairModel

                self._engine = Engine(self._searcher, PairModel.load(self._model_dir), self._config)
            return self._engine

    def search(
        self,
        claim: str,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> SearchResult:
        """Perspectives on `claim`, clustered, with stance and evidence."""
        if self.has_models:
            return self.engine().search(claim, progress, cancel)
        claim = validate_claim(claim)
        hits = self._searcher.search(claim, "perspectives", 20)
        warning = f"no trained models at {self._model_dir}: retrieval only (run `perspect train`)"
        return SearchResult(claim, (), Coverage(0, 0, warning), hits.hits, hits.took_ms)

    def retrieve(
        self, query: str, k: int = 20, pool: str = "perspectives", retriever: str | None = None
    ) -> HitList:
        """Top-k items of `pool` (bm25, colbert or hybrid), without the models."""
        return self._searcher.search(query, pool=pool, k=k, retriever=retriever)

    def close(self) -> None:
        self._searcher.close()

    def __enter__(self) -> Perspect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
