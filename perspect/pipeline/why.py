"""A cited reason per cluster: the single evidence sentence that best backs its perspective.

A paragraph backs a perspective through one or two of its sentences; showing the whole paragraph
makes the reader find them. Each sentence of the cluster's evidence (sentencex, as news is split)
is scored against the representative: the cosine of the index's dense vectors (the stored
perspective vector, the sentences encoded at query time), or without a dense retriever the share
of the perspective's words it repeats. Paragraphs marked as backing are cited before the others.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from perspect.core.result import EvidenceItem, PerspectiveCluster, Why
from perspect.indexer.news import split_sentences

_WORD = re.compile(r"\w+")
MIN_CHARS = 20  # shorter pieces ("Yes.", "1.") are not a reason


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence of `text`, in order."""
    out, pos = [], 0
    for s in split_sentences(text):
        start = text.find(s, pos)
        if start < 0:  # the segmenter changed it (whitespace): skip rather than misplace
            continue
        out.append((start, start + len(s)))
        pos = start + len(s)
    return out


def candidates(evidence: Sequence[EvidenceItem]) -> list[tuple[EvidenceItem, tuple[int, int]]]:
    """The sentences a cluster may cite: those of its backing paragraphs, else of its best one."""
    backing = [e for e in evidence if e.verdict == "supports"] or list(evidence[:1])
    return [
        (e, span)
        for e in backing
        for span in sentence_spans(e.text)
        if span[1] - span[0] >= MIN_CHARS
    ]


def cite(
    clusters: Sequence[PerspectiveCluster],
    perspective_vectors: Callable[[list[str]], np.ndarray] | None,
    embed: Callable[[list[str]], np.ndarray] | None,
) -> list[Why | None]:
    """The cited sentence of each cluster (None where it has no evidence). With vectors, the
    distinct candidate sentences of all clusters are encoded in one call."""
    per = [candidates(c.evidence) for c in clusters]
    texts = [e.text[s:t] for cand in per for e, (s, t) in cand]
    if not texts:
        return [None] * len(clusters)
    if perspective_vectors is not None and embed is not None:
        reps = perspective_vectors([c.representative.id for c in clusters])
        # clusters of one claim share paragraphs: each distinct sentence is encoded once
        unique = list(dict.fromkeys(texts))
        row = {t: i for i, t in enumerate(unique)}
        sents = embed(unique)[[row[t] for t in texts]]
    out: list[Why | None] = []
    k = 0
    for ci, (c, cand) in enumerate(zip(clusters, per, strict=True)):
        if not cand:
            out.append(None)
            continue
        if perspective_vectors is not None and embed is not None:
            scores = sents[k : k + len(cand)] @ reps[ci]
        else:
            scores = np.array([_overlap(c.representative.text, e.text[s:t]) for e, (s, t) in cand])
        k += len(cand)
        e, (s, t) = cand[int(np.argmax(scores))]
        out.append(Why(e.id, e.text[s:t], (s, t)))
    return out


def _overlap(perspective: str, sentence: str) -> float:
    """The share of the perspective's words the sentence repeats."""
    p = set(_WORD.findall(perspective.lower()))
    return len(p & set(_WORD.findall(sentence.lower()))) / max(1, len(p))
