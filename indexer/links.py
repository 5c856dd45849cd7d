"""Perspective -> evidence links, computed at index time so a search never retrieves evidence.

What backs a perspective does not depend on the claim: on the debate sites PERSPECTRUM was built
from, a perspective's evidence is the paragraph written under it. So each perspective gets its
top evidence paragraphs once, when the pools are indexed, and the engine only looks them up.

Candidates: the perspective's stored dense vector against the evidence pool's dense index, and its
text against the evidence BM25 index, fused with reciprocal rank fusion. Measured on PERSPECTRUM
dev when links were introduced: perspective-only queries beat claim + perspective queries, and the
fusion beats either retriever alone.

Each link also keeps the paragraph's sentence closest to the perspective (its span and cosine):
the search's cited reason (pipeline.why) is then a lookup too. Encoding those sentences at query
time cost a search a median of 33 sentences, ~200 ms of its evidence stage on this 2-core machine.

Stored in `links.sqlite` beside the pools of a version (perspect.core.index.links, the format).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from perspect.core.index.links import DEPTH, JUDGED, KEEP, RRF_K, Link, Links
from perspect.indexer.news import sentence_spans
from perspect.retriever.fusion import rrf

__all__ = [
    "DEPTH", "JUDGED", "KEEP", "MIN_CHARS", "RRF_K", "Link", "Links", "compute",
    "with_relations", "with_sentences",
]  # fmt: skip
MIN_CHARS = 20  # shorter pieces ("Yes.", "1.") are not a reason
NO_SENTENCE = -2.0  # the cosine stored with span (0, 0): no sentence of the paragraph to cite


def compute(
    items: Sequence[tuple[str, str]],
    evidence_backends: dict,
    perspective_vectors: np.ndarray | None,
    keep: int = KEEP,
    depth: int = DEPTH,
    progress=None,
) -> list[tuple[str, list[Link]]]:
    """Links for `items` [(perspective id, text)] against the evidence pool's backends.

    Uses whichever of `bm25` and `dense` the index has (ColBERT adds query encoding cost per
    perspective for little gain here and is left out).
    """
    dense = evidence_backends.get("dense")
    bm25 = evidence_backends.get("bm25")
    dense_runs: list[list[tuple[str, float]]] = [[] for _ in items]
    cos: list[dict[str, float]] = [{} for _ in items]
    if dense is not None and perspective_vectors is not None and len(items):
        dense_runs = dense.search_vectors(perspective_vectors, depth)
        cos = [dict(r) for r in dense_runs]
    out = []
    for n, (pid, text) in enumerate(items):
        runs = [dense_runs[n]]
        if bm25 is not None:
            runs.append(bm25.search(text, depth))
        fused = rrf([r for r in runs if r], k=RRF_K, limit=keep)
        out.append((pid, [Link(e, float(s), float(cos[n].get(e, 0.0))) for e, s in fused]))
        if progress:
            progress(1)
    return out


def with_sentences(
    rows: list[tuple[str, list[Link]]],
    perspective_vectors: np.ndarray,
    texts: Mapping[str, str],
    embed: Callable[[list[str]], np.ndarray],
    progress=None,
) -> list[tuple[str, list[Link]]]:
    """Each link with its paragraph's sentence closest to the perspective (row i's vector is
    `perspective_vectors[i]`); the distinct sentences of all linked paragraphs encoded once,
    in batches (`progress` counts paragraphs)."""
    eids = list(dict.fromkeys(x.evidence_id for _, links in rows for x in links))
    spans = {
        e: [sp for sp in sentence_spans(texts[e]) if sp[1] - sp[0] >= MIN_CHARS]
        for e in eids
        if e in texts
    }
    vecs: dict[str, np.ndarray] = {}
    step = 256
    for i in range(0, len(eids), step):
        chunk = [e for e in eids[i : i + step] if spans.get(e)]
        sents = [texts[e][s:t] for e in chunk for s, t in spans[e]]
        got = embed(sents) if sents else np.zeros((0, 1), dtype=np.float32)
        k = 0
        for e in chunk:
            vecs[e] = got[k : k + len(spans[e])]
            k += len(spans[e])
        if progress:
            progress(len(eids[i : i + step]))
    out = []
    for n, (pid, links) in enumerate(rows):
        kept = []
        for x in links:
            if x.evidence_id not in spans:  # not in the store: leave it to the search
                kept.append(x)
            elif not spans[x.evidence_id]:
                kept.append(replace(x, why=(0, 0), why_cosine=NO_SENTENCE))
            else:
                cos = vecs[x.evidence_id] @ perspective_vectors[n]
                j = int(np.argmax(cos))
                kept.append(replace(x, why=spans[x.evidence_id][j], why_cosine=float(cos[j])))
        out.append((pid, kept))
    return out


def with_relations(
    rows: Mapping[str, Sequence[Link]],
    perspective_states: Mapping[str, np.ndarray],
    texts: Mapping[str, str],
    trunk,
    judged: int = JUDGED,
    progress=None,
) -> list[tuple[str, str, float, float]]:
    """(pid, evidence id, P(entail), P(contradict)) of the cited sentence of each perspective's
    first `judged` links, read by the relation model's inference head: the sentence (premise)
    against the perspective (hypothesis), decomposed over the perspective's stored lower states.
    Why only the cited sentence: every sentence of every linked paragraph is ~850k tokens of
    lower layers for PERSPECTRUM's pool, the cited ones a fraction; the cosine picks the
    candidate, the model says whether it backs, contradicts or only relates (issue 41)."""
    todo = [
        (pid, x.evidence_id, texts[x.evidence_id][x.why[0] : x.why[1]])
        for pid, links in rows.items()
        if pid in perspective_states
        for x in links[:judged]
        if x.why and x.why[1] > x.why[0] and x.evidence_id in texts
    ]
    sentences = list(dict.fromkeys(s for _, _, s in todo))
    lower: dict[str, np.ndarray] = {}
    step = 256
    for i in range(0, len(sentences), step):
        chunk = sentences[i : i + step]
        lower.update(zip(chunk, trunk.lower(chunk), strict=True))
        if progress:
            progress(len(chunk))
    p = trunk.pairs(
        "nli", [lower[s] for _, _, s in todo], [perspective_states[pid] for pid, _, _ in todo]
    )
    return [(pid, eid, float(p[k, 0]), float(p[k, 2])) for k, (pid, eid, _) in enumerate(todo)]
