"""Training pairs for the four heads, built from PERSPECTRUM and BM25 retrieval.

Relevance negatives are BM25 candidates that are not gold (the paper trained on IR candidates, and
they are what the reranker sees at query time) plus a few random pool items. Evidence uses only
clusters with at least one eId that resolves in the pool; unresolved eIds are unknown, never negatives.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perspect.core.datasets.negation import negate
from perspect.core.datasets.perspectrum import Claim
from perspect.reranker.roles import pair_for


@dataclass(frozen=True)
class Example:
    task: str
    a: str
    b: str
    label: float


@dataclass(frozen=True)
class Corrected:
    """A reader's correction as training data: on `claim`, perspective text `a` is on side `b`
    (support, oppose, off-topic), or (kind "same") texts `a` and `b` make one point."""

    claim: str
    kind: str
    a: str
    b: str


def index_corrections(index: str, home: str | Path | None = None) -> tuple[Corrected, ...]:
    """The readers' corrections stored with `index`, as training rows: the claim as typed, the
    perspectives' texts (a correction of a perspective deleted since is left out)."""
    from perspect.core.index.corrections import Corrections
    from perspect.retriever.searcher import Searcher

    searcher = Searcher(index, home)
    try:
        with searcher.pinned():
            got = Corrections(searcher.dir.root).all()
            store = searcher.store("perspectives")
            texts = store.get_many(sorted({x for c in got for x in (c.a, c.b)}))
    finally:
        searcher.close()
    out = []
    for c in got:
        if c.a not in texts or (c.kind == "same" and c.b not in texts):
            continue  # deleted from the index since
        b = texts[c.b].text if c.kind == "same" else c.b
        out.append(Corrected(c.text or c.claim, c.kind, texts[c.a].text, b))
    return tuple(out)


def correction_examples(
    rows: Sequence[Corrected], tasks: Sequence[str]
) -> dict[str, list[Example]]:
    """Pairs from readers' corrections: a side is a stance pair and a relevant one, off-topic an
    irrelevant one, a "same" pair an equivalence positive (both orders)."""
    out: dict[str, list[Example]] = {t: [] for t in tasks}

    def add(task: str, claim: str, x: str, y: str | None, label: float) -> None:
        if task in out:
            a, b = pair_for(task, claim, x, y)
            out[task].append(Example(task, a, b, label))

    for r in rows:
        if r.kind == "same":
            add("equivalence", r.claim, r.a, r.b, 1.0)
            add("equivalence", r.claim, r.b, r.a, 1.0)
        elif r.b == "off-topic":
            add("relevance", r.claim, r.a, None, 0.0)
        else:
            add("relevance", r.claim, r.a, None, 1.0)
            add("stance", r.claim, r.a, None, 1.0 if r.b == "support" else 0.0)
    return out


def build_examples(
    claims: Sequence[Claim],
    perspectives: dict[int, str],
    evidence: dict[int, str],
    searcher,
    rng: random.Random,
    tasks: Sequence[str],
    hard_negatives: int = 15,
    random_negatives: int = 5,
    evidence_negatives: int = 4,
    contrast_stance: bool = False,
) -> dict[str, list[Example]]:
    """Pairs per task. `contrast_stance`: each stance pair also with the claim negated
    (perspect.core.datasets.negation) and the label swapped, so the model learns to read the
    perspective's attitude to the *claim*, not to its topic."""
    out: dict[str, list[Example]] = {t: [] for t in tasks}
    pool_ids = list(perspectives)
    ev_ids = list(evidence)

    def add(task: str, claim: str, x: str, y: str | None, label: float) -> None:
        a, b = pair_for(task, claim, x, y)
        out[task].append(Example(task, a, b, label))

    for c in claims:
        gold = [p for p in sorted(c.pids) if p in perspectives]
        if "relevance" in tasks:
            for p in gold:
                add("relevance", c.text, perspectives[p], None, 1.0)
            hits = [int(h.id) for h in searcher.search(c.text, "perspectives", 40).hits]
            hard = [p for p in hits if p not in c.pids][:hard_negatives]
            rand = [p for p in rng.sample(pool_ids, random_negatives) if p not in c.pids]
            for p in hard + rand:
                add("relevance", c.text, perspectives[p], None, 0.0)
        if "stance" in tasks:
            for cl in c.clusters:
                for p in cl.pids:
                    if p in perspectives:
                        label = 1.0 if cl.stance == "SUPPORT" else 0.0
                        add("stance", c.text, perspectives[p], None, label)
                        if contrast_stance:
                            add("stance", negate(c.text), perspectives[p], None, 1.0 - label)
        if "equivalence" in tasks:
            cluster_of = {
                p: i for i, cl in enumerate(c.clusters) for p in cl.pids if p in perspectives
            }
            pos, neg = [], []
            for a, b in itertools.combinations(sorted(cluster_of), 2):
                (pos if cluster_of[a] == cluster_of[b] else neg).append((a, b))
            neg = rng.sample(neg, min(len(neg), 2 * len(pos) + 2))
            for (a, b), label in [(x, 1.0) for x in pos] + [(x, 0.0) for x in neg]:
                if rng.random() < 0.5:
                    a, b = b, a
                add("equivalence", c.text, perspectives[a], perspectives[b], label)
        if "evidence" in tasks and evidence:
            for cl in c.clusters:
                gold_e = [e for e in cl.evidence if e in evidence]
                members = [p for p in cl.pids if p in perspectives]
                if not gold_e or not members:
                    continue
                persp = perspectives[rng.choice(members)]
                for e in gold_e:
                    add("evidence", c.text, persp, evidence[e], 1.0)
                hits = [
                    int(h.id) for h in searcher.search(f"{c.text} {persp}", "evidence", 20).hits
                ]
                negs = [e for e in hits if e not in cl.evidence][:evidence_negatives]
                negs += [e for e in rng.sample(ev_ids, 1) if e not in cl.evidence]
                for e in negs:
                    add("evidence", c.text, persp, evidence[e], 0.0)
    return out
