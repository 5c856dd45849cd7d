"""A cited reason per cluster: the single evidence sentence that best backs its perspective.

A paragraph backs a perspective through one or two of its sentences; showing the whole paragraph
makes the reader find them. Each sentence of the cluster's evidence (sentencex, as news is split)
is scored against the perspective: the cosine of the index's dense vectors, or without a dense
retriever the share of the perspective's words it repeats. Only paragraphs marked as backing
("supports") are cited from: a cluster without one says "no backing sentence found" rather than
citing a sentence that merely shares its words, or argues the opposite (issue 41). The cosines are index-time data (each stored link keeps its paragraph's best
sentence, indexer.links): encoding a search's ~33 candidate sentences here cost ~190 ms of its
~450; an index linked before that is still cited by encoding them at query time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from perspect.core.model.decisions import RelationCuts
from perspect.core.result import EvidenceItem, PerspectiveCluster, Why
from perspect.indexer.links import MIN_CHARS
from perspect.indexer.news import sentence_spans

_WORD = re.compile(r"\w+")


def backing(evidence: Sequence[EvidenceItem]) -> list[EvidenceItem]:
    """The paragraphs a cluster may cite from: those whose verdict is "supports", and no other.
    A cluster without one cites nothing ("no backing sentence found"): on the reader bench's 27
    judged clusters, the fallback to the best merely related paragraph gave 17 of the 27 cited
    reasons, of which 4 argued the opposite and 5 were unrelated; cited only from "supports"
    paragraphs, 10 reasons are shown, 9 back their perspective and 1 argues the opposite."""
    return [e for e in evidence if e.verdict == "supports"]


def candidates(evidence: Sequence[EvidenceItem]) -> list[tuple[EvidenceItem, tuple[int, int]]]:
    """The sentences a cluster may cite: those of its backing paragraphs."""
    return [
        (e, span)
        for e in backing(evidence)
        for span in sentence_spans(e.text)
        if span[1] - span[0] >= MIN_CHARS
    ]


# evidence id -> (best span, its cosine, P(entail), P(contradict) by the relation model or None)
Stored = Mapping[str, tuple[tuple[int, int], float, float | None, float | None]]


def cite(
    clusters: Sequence[PerspectiveCluster],
    perspective_vectors: Callable[[list[str]], np.ndarray] | None,
    embed: Callable[[list[str]], np.ndarray] | None,
    stored: Sequence[Stored] | None = None,
    cuts: RelationCuts | None = None,
) -> list[Why | None]:
    """The cited sentence of each cluster (None where it has no evidence).

    `stored[i]`: cluster i's links' best sentences, computed at index time (indexer.links); a
    cluster whose every candidate paragraph has one is cited from them with nothing encoded (the
    same choice: each paragraph's best sentence, then the best of those). The others are scored
    here; with vectors, their distinct candidate sentences are encoded in one call.

    `cuts` (the relation model's, with links it judged): a cluster cites the sentence that most
    entails its perspective among its "supports" paragraphs (whose verdict says their sentence
    entails it and does not contradict it), and nothing when none does: "no backing sentence
    found" rather than a sentence that only shares words, or argues the opposite."""
    out: list[Why | None] = [None] * len(clusters)
    todo = []
    for ci, c in enumerate(clusters):
        paragraphs = backing(c.evidence)
        known = stored[ci] if stored is not None else {}
        if cuts is not None and any(v[2] is not None for v in known.values()):
            sure = [e for e in c.evidence if e.verdict == "supports" and e.id in known]
            if sure:
                best = max(sure, key=lambda e: known[e.id][2] or 0.0)
                (s, t) = known[best.id][0]
                out[ci] = Why(best.id, best.text[s:t], (s, t)) if t > s else None
            continue
        if paragraphs and all(e.id in known for e in paragraphs):
            best = max(paragraphs, key=lambda e: known[e.id][1])  # first of ties, as below
            (s, t) = known[best.id][0]
            out[ci] = Why(best.id, best.text[s:t], (s, t)) if t > s else None
        else:
            todo.append(ci)
    per = {ci: candidates(clusters[ci].evidence) for ci in todo}
    texts = [e.text[s:t] for ci in todo for e, (s, t) in per[ci]]
    if not texts:
        return out
    vectors = perspective_vectors is not None and embed is not None
    if vectors:
        rep_ids = [clusters[ci].representative.id for ci in todo]
        reps = dict(zip(todo, perspective_vectors(rep_ids), strict=True))
        # clusters of one claim share paragraphs: each distinct sentence is encoded once
        unique = list(dict.fromkeys(texts))
        row = {t: i for i, t in enumerate(unique)}
        sents = embed(unique)[[row[t] for t in texts]]
    k = 0
    for ci in todo:
        cand = per[ci]
        if not cand:
            continue
        if vectors:
            scores = sents[k : k + len(cand)] @ reps[ci]
        else:
            rep = clusters[ci].representative.text
            scores = np.array([_overlap(rep, e.text[s:t]) for e, (s, t) in cand])
        k += len(cand)
        e, (s, t) = cand[int(np.argmax(scores))]
        out[ci] = Why(e.id, e.text[s:t], (s, t))
    return out


RESTATES = 0.6  # word-set Jaccard at or over which a sentence only restates a perspective


def without_restatements(
    clusters: Sequence[PerspectiveCluster], reasons: Sequence[Why | None]
) -> list[Why | None]:
    """The cited reasons, less those that only restate a phrasing of their own cluster: the
    sentence closest to a perspective is often the perspective itself, quoted by its paragraph
    ("space exploration is a waste of money." under "space exploration is a waste of money"),
    which says what, not why. Such a cluster says "no backing sentence found". On the 16 unseen
    claims of bench/reader.py reasons, 2 of 12 cited reasons were restatements (word-set Jaccard 1.0
    and .67, a copy with its typos mended); on 60 dev claims, 0 of 35. The closest reason kept
    there is at .59: a report's finding in the perspective's words, with who found it."""
    return [
        None if w is not None and any(restates(m.text, w.sentence) for m in c.members) else w
        for c, w in zip(clusters, reasons, strict=True)
    ]


def restates(perspective: str, sentence: str) -> bool:
    """Whether `sentence` only restates `perspective`: their word sets' Jaccard is RESTATES or
    more."""
    x, y = set(_WORD.findall(perspective.lower())), set(_WORD.findall(sentence.lower()))
    return len(x & y) / max(1, len(x | y)) >= RESTATES


def _overlap(perspective: str, sentence: str) -> float:
    """The share of the perspective's words the sentence repeats."""
    p = set(_WORD.findall(perspective.lower()))
    return len(p & set(_WORD.findall(sentence.lower()))) / max(1, len(p))


def read_back(
    clusters: Sequence[PerspectiveCluster],
    reasons: Sequence[Why | None],
    reader,
    cuts: RelationCuts,
) -> list[Why | None]:
    """The cited reasons the joint reader (the comparator's inference head) reads as entailing
    their cluster's perspective, and not contradicting it; the others become None ("no backing
    sentence found"). One pair per cited cluster, in one batch (about 10 a search).
    Why: the cosine picks the sentence closest to the perspective, whichever way it argues. On the
    reader bench's 24 claims (bench/reader.py, judged by hand), 45 reasons were cited: 34 backed
    their perspective, 7 argued the opposite, 4 did not bear on it; the 16 this check keeps: 14,
    1 and 1 (git history: bench/RESULTS.md before 2026-12-04). Fewer reasons, but a reason
    shown is one."""
    todo = [
        (i, w.sentence, c.representative.text)
        for i, (c, w) in enumerate(zip(clusters, reasons, strict=True))
        if w is not None
    ]
    if not todo:
        return list(reasons)
    p = reader.inference([(s, r) for _, s, r in todo])
    out = list(reasons)
    for k, (i, _, _) in enumerate(todo):
        if p[k, 0] < cuts.entail_at or p[k, 2] >= cuts.contradict_at:
            out[i] = None
    return out
