"""Typed records shared by the indexer, the retrievers and the public API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

Pool = Literal["perspectives", "evidence", "news", "documents"]


@dataclass(frozen=True)
class PoolSpec:
    """One pool and what the rest of Perspect does with it: the one place a pool is named. Adding
    a pool is a row here, a reader in `indexer.indexer.read_source`, and the stage that shows it.

    `articles`: sentences of articles (ids `ARTICLE#POSITION`, with title, outlet, date, url); a
    search mines them for perspectives where the index has documents (perspect.pipeline.mining).
    `colbert`: ColBERT indexes it by default (the pools the pipeline retrieves from; evidence is
    reached through links precomputed from BM25 + dense, and its PLAID index was a third of
    `make demo`'s build). `states`: its items' lower-layer states are kept with the index (the
    argument trunk reads them against every claim). `reasons`: the order in which a cluster
    without a reason looks for one here (a reader's own documents first); 0: never."""

    name: Pool
    articles: bool = False
    colbert: bool = False
    states: bool = False
    reasons: int = 0


POOL_SPECS: tuple[PoolSpec, ...] = (
    PoolSpec("perspectives", colbert=True, states=True),
    PoolSpec("evidence"),
    PoolSpec("news", articles=True, colbert=True, reasons=2),
    PoolSpec("documents", articles=True, states=True, reasons=1),
)
POOLS: tuple[Pool, ...] = tuple(p.name for p in POOL_SPECS)
ARTICLE_POOLS: tuple[Pool, ...] = tuple(p.name for p in POOL_SPECS if p.articles)
COLBERT_POOLS: tuple[Pool, ...] = tuple(p.name for p in POOL_SPECS if p.colbert)
STATE_POOLS: tuple[Pool, ...] = tuple(p.name for p in POOL_SPECS if p.states)
REASON_POOLS: tuple[Pool, ...] = tuple(
    p.name for p in sorted(POOL_SPECS, key=lambda p: p.reasons) if p.reasons
)

MAX_CLAIM_CHARS = 2000


def _frozen_map(m: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(m or {}))


class FrozenMetadata:
    """Mixin for frozen dataclasses with a `metadata` field: stored as a read-only mapping, so a
    result handed to a caller cannot be changed behind another caller's back."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "metadata", _frozen_map(self.metadata))


@dataclass(frozen=True)
class Item(FrozenMetadata):
    """One retrievable unit: a perspective, an evidence paragraph, a news or document sentence."""

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit(FrozenMetadata):
    """A retrieved item with its score and 1-based rank within one pool."""

    id: str
    text: str
    score: float
    rank: int
    pool: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "score": round(float(self.score), 6),
            "rank": self.rank,
            "pool": self.pool,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class HitList:
    """Retrieval answer for one query over one pool (the JSON schema of `perspect search --json`)."""

    query: str
    pool: str
    retriever: str
    hits: tuple[Hit, ...]
    took_ms: float

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "perspect.hits/1",
            "query": self.query,
            "pool": self.pool,
            "retriever": self.retriever,
            "took_ms": round(self.took_ms, 3),
            "hits": [h.to_json() for h in self.hits],
        }


def validate_claim(claim: object) -> str:
    """Return the stripped claim, or raise ClaimError saying what is wrong with it."""
    from perspect.core.errors import ClaimError

    if not isinstance(claim, str):
        raise ClaimError(f"a claim must be text, got {type(claim).__name__}")
    try:
        claim.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: bytes that were not UTF-8 on the command line
        raise ClaimError(
            "the claim is not valid UTF-8 text",
            hint="check the terminal's encoding (e.g. LANG=C.UTF-8) or the file it came from",
        ) from None
    text = " ".join(claim.split())
    if not text:
        raise ClaimError(
            "the claim is empty", hint='type a statement, e.g. "animals should have rights"'
        )
    if len(text) > MAX_CLAIM_CHARS:
        raise ClaimError(
            f"the claim is {len(text):,} characters long; the limit is {MAX_CLAIM_CHARS:,}",
            hint="state the claim in a sentence or two",
        )
    return text


@dataclass(frozen=True)
class Query:
    """A claim as the pipeline uses it, computed once per search and handed from stage to stage:
    its text, its dense vector (None where the index has no dense retriever, or before it is
    needed) and its stems (what a perspective adds to the claim is measured against them)."""

    text: str
    vector: Any = None  # np.ndarray; kept untyped here so the ground floor needs no numpy import
    stems: frozenset[str] = frozenset()
