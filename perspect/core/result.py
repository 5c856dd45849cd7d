"""Typed results of a full Perspect search, with their documented JSON form (`perspect.result/1`).

Why one module: these types are one JSON document (docs/json-schemas.md), read together by every
front door; split, a reader of the schema would open five files for one answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perspect.core.types import FrozenMetadata, Hit, _frozen_map


@dataclass(frozen=True)
class EvidenceItem(FrozenMetadata):
    """An evidence paragraph linked to a perspective cluster at index time."""

    id: str
    text: str
    # P(the paragraph backs the representative) from the evidence stack (engine.link_scores);
    # the bi-encoder cosine for models tuned before that stack
    score: float
    verdict: (
        str  # "supports": a link close to the cluster's best, over the tuned cut; else "related"
    )
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "score": round(self.score, 4),
            "verdict": self.verdict,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class Provenance:
    """Where a mined sentence comes from: its pool (the reader's documents, or news), its
    article and its position there (`ARTICLE#POSITION` is the sentence's id), with what the
    article said of itself."""

    pool: str
    article_id: str
    position: int
    title: str | None = None
    outlet: str | None = None
    date: str | None = None
    url: str | None = None

    @classmethod
    def of(cls, pool: str, ident: str, metadata: Mapping[str, Any]) -> Provenance:
        article, _, pos = ident.rpartition("#")
        got = {k: metadata.get(k) for k in ("title", "outlet", "date", "url")}
        return cls(
            pool,
            str(metadata.get("article_id") or article or ident),
            int(metadata.get("position", pos if pos.isdigit() else 0)),
            **{k: None if v is None else str(v) for k, v in got.items()},
        )

    @property
    def source(self) -> str:
        """Who carries it, for counting sources: the outlet, else the article."""
        return self.outlet or self.article_id

    @property
    def label(self) -> str:
        """outlet · date · title (what is known), for a reader."""
        parts = [x for x in (self.outlet, self.date, self.title) if x]
        return " · ".join(parts) if parts else self.article_id

    def to_json(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "article_id": self.article_id,
            "position": self.position,
            "title": self.title,
            "outlet": self.outlet,
            "date": self.date,
            "url": self.url,
        }


@dataclass(frozen=True)
class Member(FrozenMetadata):
    """One phrasing of a perspective, with the model's judgement of it for this claim: a curated
    perspective, or a sentence mined from the reader's documents or the news (`source` says
    where from; perspect.pipeline.mining)."""

    id: str
    text: str
    relevance: float  # calibrated P(valid perspective on the claim); mined: P(an argument on it)
    support: float  # calibrated P(supports the claim); 1 - support is P(opposes)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    corrected: bool = (
        False  # a reader's correction set its side or merged it (core.index.corrections)
    )
    source: Provenance | None = None  # a mined sentence's article; None: a curated perspective

    @property
    def mined(self) -> bool:
        return self.source is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "relevance": round(self.relevance, 4),
            "support": round(self.support, 4),
            "corrected": self.corrected,
            "metadata": dict(self.metadata),
            "source": self.source.to_json() if self.source else None,
        }


@dataclass(frozen=True)
class Why:
    """The one sentence that best backs a cluster's perspective: its cited reason. `span` is
    [start, end) of `sentence` inside that evidence item's text. `source`: where the reason was
    found in the reader's documents or the news (its id is then that sentence's), because the
    cluster's evidence paragraphs had none (perspect.pipeline.pool_reasons); None: from its
    evidence."""

    evidence: str
    sentence: str
    span: tuple[int, int]
    source: Provenance | None = None

    @property
    def cited_from(self) -> str:
        """What a reader is shown after the sentence: the evidence id, or the document or news
        article it comes from."""
        if self.source is None:
            return f"evidence {self.evidence}"
        kind = "news" if self.source.pool == "news" else "document"
        return f"{kind}: {self.source.label}"

    def to_json(self) -> dict[str, Any]:
        return {
            "evidence": self.evidence,
            "sentence": self.sentence,
            "span": list(self.span),
            "source": self.source.to_json() if self.source else None,
        }


# A side held with P < LEAN is shown as "leans ...". The stance head is calibrated (Platt, on the
# held-out train claims), so .65 means about two in three such calls are right.
LEAN = 0.65


@dataclass(frozen=True)
class PerspectiveCluster:
    """Equivalent phrasings merged into one perspective, its side, strength and evidence."""

    representative: Member
    members: tuple[Member, ...]
    stance: str  # "support", "oppose", or "unclear" (too close to call: Decisions.side)
    strength: float  # P(of the side it leans to), members' mean: 0.5 undecided .. 1.0 certain
    score: float  # ordering score: relevance x stance strength x substantiation
    evidence: tuple[EvidenceItem, ...] = ()
    leans: str | None = None  # an unclear cluster: the side it leans to, weakly
    why: Why | None = None  # the evidence sentence that best backs it (pipeline.why)

    @property
    def supported_by(self) -> int:
        return sum(1 for e in self.evidence if e.verdict == "supports")

    @property
    def sources(self) -> tuple[str, ...]:
        """The outlets (else articles) its mined members come from, each once, in order."""
        return tuple(dict.fromkeys(m.source.source for m in self.members if m.source))

    @property
    def debate(self) -> Debate | None:
        """The debate its first phrasing with one was written for, and its side there (issue 72:
        perspect.core.datasets.debates keeps them as each argument's metadata)."""
        for m in (self.representative, *self.members):
            got = Debate.of(m.metadata)
            if got is not None:
                return got
        return None

    @property
    def mined_only(self) -> bool:
        """Every phrasing was mined from documents or news: no curated perspective makes it."""
        return all(m.mined for m in self.members)

    @property
    def side_label(self) -> str:
        """What a reader is told: "support" / "oppose", or "leans support" / "leans oppose" when
        the model's calibrated P(side) is below LEAN: a guess must not read as a verdict."""
        if self.stance == "unclear":
            return f"unclear (leans {self.leans})" if self.leans else "unclear"
        return self.stance if self.strength >= LEAN else f"leans {self.stance}"

    def to_json(self) -> dict[str, Any]:
        return {
            "representative": self.representative.to_json(),
            "members": [m.to_json() for m in self.members],
            "stance": self.stance,
            "strength": round(self.strength, 4),
            "side_label": self.side_label,
            "leans": self.leans,
            "score": round(self.score, 4),
            "evidence": [e.to_json() for e in self.evidence],
            "why": self.why.to_json() if self.why else None,
            "sources": len(self.sources),
            "mined": sum(1 for m in self.members if m.mined),
            "debate": self.debate.to_json() if self.debate else None,
        }


@dataclass(frozen=True)
class Debate:
    """Where a curated argument comes from: the claim or thesis it was written for, its side
    there ("support" / "oppose"), its source and licence."""

    text: str
    side: str
    source: str
    licence: str = ""

    @classmethod
    def of(cls, metadata: Mapping[str, Any]) -> Debate | None:
        text, side = metadata.get("debate"), metadata.get("side")
        if not text or side not in ("support", "oppose"):
            return None
        return cls(str(text), str(side), str(metadata.get("source") or ""),
                   str(metadata.get("licence") or ""))  # fmt: skip

    @property
    def label(self) -> str:
        """What a reader is told: written for / against 'the debate' (source)."""
        way = "for" if self.side == "support" else "against"
        return f"written {way} '{self.text}'" + (f" ({self.source})" if self.source else "")

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "side": self.side, "source": self.source,
                "licence": self.licence, "label": self.label}  # fmt: skip


@dataclass(frozen=True)
class NewsItem(FrozenMetadata):
    """A news sentence that strengthens or weakens the claim (the ClaimDiff comparator, sentence
    -> claim), with the words that carry it and the perspective cluster it bears on most."""

    id: str
    text: str
    relation: str  # "strengthens" or "weakens" (the claim)
    probability: float  # P(that relation), sentence -> claim
    rationale: tuple[tuple[int, int], ...]  # character spans of `text`
    cluster: str | None = None  # representative id of the cluster it bears on most, if any
    cluster_relation: str | None = None  # "strengthens" / "weakens" (that cluster)
    cluster_probability: float = 0.0
    metadata: Mapping[str, Any] = field(default_factory=dict)  # outlet, date, title, article_id
    # ids of the other retrieved news sentences with the same words (wire copies, syndication):
    # shown once, under the best-ranked copy
    also: tuple[str, ...] = ()

    @property
    def rationale_words(self) -> tuple[str, ...]:
        return tuple(self.text[s:e] for s, e in self.rationale)

    @property
    def leaning(self) -> str:
        """The outlet's leaning (left, centre, right; "unrated" where nobody rated it)."""
        return str(self.metadata.get("leaning") or "unrated")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "relation": self.relation,
            "probability": round(self.probability, 4),
            "rationale": [
                {"start": s, "end": e, "text": self.text[s:e]} for s, e in self.rationale
            ],
            "cluster": self.cluster,
            "cluster_relation": self.cluster_relation,
            "cluster_probability": round(self.cluster_probability, 4),
            "outlet": self.metadata.get("outlet"),
            "date": self.metadata.get("date"),
            "title": self.metadata.get("title"),
            "url": self.metadata.get("url"),
            "leaning": self.leaning,
            "article_id": self.metadata.get("article_id"),
            "also": list(self.also),
        }


LEANINGS = ("left", "centre", "right")


@dataclass(frozen=True)
class Spread:
    """How the perspectives shown spread across the press: for each leaning, how many clusters
    news from outlets of that leaning strengthens (`carried`), and for each side the leanings that
    carry it. A side carried by one leaning alone is worth a warning: the reader sees what one
    part of the press argues, not that the press agrees."""

    carried: Mapping[str, int]
    sides: Mapping[str, tuple[str, ...]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "carried", _frozen_map(self.carried))
        object.__setattr__(self, "sides", _frozen_map(self.sides))

    @classmethod
    def of(cls, clusters: Sequence[PerspectiveCluster], news: Sequence[NewsItem]) -> Spread:
        side = {c.representative.id: c.stance for c in clusters}
        by: dict[str, set[str]] = {}  # leaning -> clusters it strengthens
        for n in news:
            if n.cluster in side and n.cluster_relation == "strengthens":
                by.setdefault(n.leaning, set()).add(n.cluster)
        carried = {k: len(by.get(k, ())) for k in LEANINGS}
        if by.get("unrated"):
            carried["unrated"] = len(by["unrated"])
        sides = {
            st: tuple(
                k for k in (*LEANINGS, "unrated") if any(side[c] == st for c in by.get(k, ()))
            )
            for st in ("support", "oppose")
        }
        return cls(carried, sides)

    @property
    def any(self) -> bool:
        return any(self.carried.values())

    @property
    def line(self) -> str | None:
        """ "carried by left 4 · centre 1 · right 0" (None: no news carries any perspective)."""
        if not self.any:
            return None
        return "carried by " + " · ".join(f"{k} {v}" for k, v in self.carried.items())

    @property
    def warnings(self) -> tuple[str, ...]:
        """A side that outlets of one rated leaning alone carry."""
        out = []
        for st, ks in self.sides.items():
            if len(ks) == 1 and ks[0] != "unrated":
                out.append(f"the {st} side is carried by {ks[0]}-leaning outlets alone")
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "carried": dict(self.carried),
            "sides": {k: list(v) for k, v in self.sides.items()},
            "line": self.line,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class SecondReading:
    """How a claim that acts on a thing is also read (perspect.pipeline.valence gives it, the
    stance decision mixes it in, a result carries it): `text` ("Zoos are good") and `sign` (+1:
    the claim stands with it, -1: against it). Shown so that a reader
    can see why an argument about zoos sits on a side of closing them."""

    text: str
    sign: int

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "sign": self.sign}

    @property
    def line(self) -> str:
        way = "the same way round" if self.sign > 0 else "the other way round"
        return f"also read as “{self.text}”, {way}"


@dataclass(frozen=True)
class Coverage:
    """How many clusters each side got; unclear ones are counted apart, outside the balance.
    `thin`: what the sides shown rest on where a reader should know it (pipeline.order): a side
    that comes only from mined sentences, or from one outlet."""

    support: int
    oppose: int
    warning: str | None = None
    unclear: int = 0
    thin: tuple[str, ...] = ()

    @property
    def line(self) -> str | None:
        """The warning and the notes on the sides' sources, as one line (None: nothing to say)."""
        said = "; ".join(x for x in (self.warning, *self.thin) if x)
        return said or None

    def to_json(self) -> dict[str, Any]:
        return {
            "support": self.support,
            "oppose": self.oppose,
            "unclear": self.unclear,
            "warning": self.warning,
            "thin": list(self.thin),
        }


@dataclass(frozen=True)
class SourceContext:
    """A mined sentence in its article: the article's sentences in order and which one it is
    (`focus`), for a reader who opens it (`Perspect.context`)."""

    pool: str
    sentence_id: str
    focus: int  # index into `sentences`
    sentences: tuple[str, ...]
    source: Provenance

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "perspect.context/1",
            "pool": self.pool,
            "sentence_id": self.sentence_id,
            "focus": self.focus,
            "sentences": list(self.sentences),
            "source": self.source.to_json(),
        }


@dataclass(frozen=True)
class SearchResult:
    """What `Perspect.search` returns: ordered clusters (both sides interleaved) and coverage."""

    claim: str
    clusters: tuple[PerspectiveCluster, ...]
    coverage: Coverage
    hits: tuple[Hit, ...]  # the retrieval candidates the models judged
    took_ms: float
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    news: tuple[NewsItem, ...] = ()  # related news sentences, strongest first (a news pool only)
    # when no perspective passed the relevance cut: the best few candidates, most relevant
    # first, shown apart as "related, low confidence" rather than an empty answer
    related: tuple[Member, ...] = ()
    # the claim's second reading where the stance decision used one
    second_reading: SecondReading | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "timings_ms", _frozen_map(self.timings_ms))

    def side(self, stance: str) -> tuple[PerspectiveCluster, ...]:
        return tuple(c for c in self.clusters if c.stance == stance)

    def news_for(self, cluster: PerspectiveCluster) -> tuple[NewsItem, ...]:
        return tuple(n for n in self.news if n.cluster == cluster.representative.id)

    @property
    def spread(self) -> Spread:
        """Which leanings of the press carry the perspectives shown (Spread)."""
        return Spread.of(self.clusters, self.news)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "perspect.result/1",
            "claim": self.claim,
            "coverage": self.coverage.to_json(),
            "clusters": [c.to_json() for c in self.clusters],
            "hits": [h.to_json() for h in self.hits],
            "news": [n.to_json() for n in self.news],
            "spread": self.spread.to_json(),
            "related": [m.to_json() for m in self.related],
            "second_reading": None
            if self.second_reading is None
            else self.second_reading.to_json(),
            "took_ms": round(self.took_ms, 2),
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }
