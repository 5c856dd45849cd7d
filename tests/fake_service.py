"""A stand-in `SearchService` for the terminal UI's tests: answers at once, slowly, or never.

The real engine is tested end to end in tests/test_tui_real.py; here the UI's own behaviour
(cancelling, quitting, what each screen shows) is driven without loading a model.
"""

from __future__ import annotations

import threading
from pathlib import Path

from perspect.core.errors import Cancelled, NotInIndex
from perspect.core.result import (
    Coverage,
    EvidenceItem,
    Member,
    PerspectiveCluster,
    Provenance,
    SearchResult,
    SecondReading,
    SourceContext,
)
from perspect.core.service import ServiceStatus


def answer(claim: str) -> SearchResult:
    """Two clusters per side: one sure, one leaning; evidence on the first."""

    def member(i: str, text: str, support: float) -> Member:
        return Member(i, text, relevance=0.9, support=support, metadata={"source": "fake"})

    clusters = (
        PerspectiveCluster(
            member("1", "Animals feel pain.", 0.9),
            (member("1", "Animals feel pain.", 0.9), member("2", "Animals can suffer.", 0.88)),
            "support",
            0.89,
            0.8,
            (
                EvidenceItem("e1", "Mammals have pain receptors.", 0.81, "supports"),
                EvidenceItem("e2", "Zoos are popular.", 0.4, "related"),
            ),
        ),
        PerspectiveCluster(
            member("3", "Rights come with duties.", 0.1),
            (member("3", "Rights come with duties.", 0.1),),
            "oppose",
            0.9,
            0.7,
        ),
        PerspectiveCluster(
            member("4", "Pets are property.", 0.4),
            (member("4", "Pets are property.", 0.4),),
            "oppose",
            0.6,
            0.5,
        ),
    )
    return SearchResult(claim, clusters, Coverage(1, 2), (), took_ms=12.0)


# an article of the reader's documents, whose second sentence the "mined" answer shows
ARTICLE = Provenance("documents", "ledger-7", 1, "Zoos are prisons", "The Ledger", "2025-03-04",
                     "https://ledger.example/zoos")  # fmt: skip
ARTICLE_TEXT = (
    "The city zoo opened a new enclosure on Monday.",
    "Zoos confine wild animals to small spaces for their whole lives.",
    "Visitors numbers rose by a tenth last year.",
)


def mined_answer(claim: str) -> SearchResult:
    """The answer plus one cluster mined from the reader's documents, alone on its side."""
    from dataclasses import replace

    res = answer(claim)
    m = Member("ledger-7#1", ARTICLE_TEXT[1], 0.8, 0.2, {"outlet": "The Ledger"}, source=ARTICLE)
    mined = PerspectiveCluster(m, (m,), "oppose", 0.8, 0.95)
    cov = Coverage(1, 3, thin=("the opposing side comes only from mined sentences",))
    # as the engine reads a claim that acts on a thing (pipeline.valence)
    reading = SecondReading("Zoos are good", -1)
    return replace(res, clusters=(mined, *res.clusters), coverage=cov, second_reading=reading)


class FakeService:
    """`mode`: "answer" (at once), "mined" (at once, with a perspective mined from a document),
    "cooperative" (runs until cancelled, then raises Cancelled, as the engine does between
    stages) or "stuck" (ignores cancel: a native call that never returns)."""

    def __init__(self, mode: str = "answer", index: str = "fake"):
        self.mode = mode
        self.index = index
        self.searches: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()  # ends a stuck search (test clean-up)
        self.corrections: list[dict] = []  # what the UI asked, in order
        self.sides: dict[str, str] = {}  # perspective id -> side a reader gave it

    def status(self) -> ServiceStatus:
        return ServiceStatus(self.index, {"perspectives": 4, "evidence": 2}, True, True)

    def search(self, claim, progress=None, cancel=None) -> SearchResult:
        self.searches.append(claim)
        self.started.set()
        if progress:
            progress("retrieving perspectives", 0.1)
        if self.mode == "cooperative" and len(self.searches) == 1:
            while not (cancel is not None and cancel.wait(0.01)):
                pass
            raise Cancelled("search cancelled")
        if self.mode == "stuck":
            self.release.wait()
        res = mined_answer(claim) if self.mode == "mined" else answer(claim)
        if not self.sides:
            return res
        from dataclasses import replace

        def fixed(c):
            side = self.sides.get(c.representative.id)
            if side is None:
                return c
            members = tuple(replace(m, corrected=True) for m in c.members)
            return replace(c, stance=side, members=members, representative=members[0])

        return replace(res, clusters=tuple(fixed(c) for c in res.clusters))

    def correct(self, claim, perspective=None, side=None, same=None, undo=False) -> bool:
        self.corrections.append(
            {"claim": claim, "perspective": perspective, "side": side, "same": same, "undo": undo}
        )
        if perspective is not None:
            if undo:
                self.sides.pop(perspective, None)
            else:
                self.sides[perspective] = side
        return True

    def compare(self, a: str | Path, b: str | Path):
        raise NotImplementedError("the fake compares nothing")

    def context(self, sentence_id: str, pool: str = "documents") -> SourceContext:
        if sentence_id != "ledger-7#1":
            raise NotInIndex(f"index {self.index!r} has no {pool} sentence {sentence_id!r}")
        return SourceContext(pool, sentence_id, 1, ARTICLE_TEXT, ARTICLE)
