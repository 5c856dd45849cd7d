"""The first stage: candidate perspectives for a claim, and the claim as a `Query`.

The claim's dense vector, computed once for dense retrieval, rides along in the `Query`: every
cosine feature of the later stages reads it instead of encoding the claim again.
"""

from __future__ import annotations

from dataclasses import dataclass

from perspect.core.types import Hit, Query
from perspect.retriever.base import VectorBackend
from perspect.retriever.searcher import Searcher


@dataclass(frozen=True)
class Candidates:
    hits: tuple[Hit, ...]
    query: Query


class Retrieve:
    def __init__(self, searcher: Searcher, depth: int, rrf_k: int):
        self.searcher = searcher
        self.depth = depth  # each retriever's depth before RRF
        self.rrf_k = rrf_k

    @property
    def vectors(self) -> VectorBackend | None:
        """The perspective pool's stored vectors, or None (an index without a dense retriever)."""
        return self.searcher.vector_backend("perspectives")

    def __call__(self, claim: str, k: int) -> Candidates:
        """Hybrid candidates: RRF over every retriever of the index (one retriever included: the
        relevance stack reads the fused score)."""
        got = self.searcher.hybrid(claim, "perspectives", k, self.depth, self.rrf_k)
        return Candidates(got.hits.hits, self.query(claim, got.vector))

    def query(self, claim: str, vector=None) -> Query:
        """The claim with its stems, and its dense vector when given (or, with `vector=True`,
        encoded now where the index has dense vectors)."""
        if vector is True:
            vector = self.vectors.embed_queries([claim])[0] if self.vectors is not None else None
        stems = self.stems(claim) if "bm25" in self.searcher.retrievers else set()
        return Query(claim, vector, frozenset(stems))

    def stems(self, text: str) -> set[str]:
        return set(self.searcher.backend("perspectives", "bm25").tokens(text))
