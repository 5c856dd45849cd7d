"""Lazy complete-link (perspect.pipeline.linkage): the partitions of scoring every pair, fewer
pairs asked for, and a budget that only ever merges less."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perspect.pipeline.clusters import complete_link
from perspect.pipeline.linkage import lazy_complete_link


def _case(rng, n):
    """A stack-like probability: a base logit plus a model score in [0, 1] with a positive weight,
    so each pair lies between its value at score 0 (lo) and at score 1 (hi)."""
    base = rng.uniform(-3, 1, size=(n, n))
    base = (base + base.T) / 2
    s = rng.uniform(size=(n, n))
    s = (s + s.T) / 2

    def prob(x):
        return 1 / (1 + np.exp(-(base + 3 * x)))

    side = rng.uniform(size=n) < 0.6
    return prob(0.0), prob(1.0), prob(s), side[:, None] == side[None, :]


def _same(a, b) -> bool:
    return bool(((a[:, None] == a[None, :]) == (b[:, None] == b[None, :])).all())


def test_lazy_gives_the_partitions_of_scoring_every_pair_and_asks_for_fewer():
    rng = np.random.default_rng(7)
    asked = needed = 0
    for _ in range(200):
        n = int(rng.integers(2, 25))
        lo, hi, exact, allowed = _case(rng, n)
        cut = 0.4
        calls: list[int] = []

        def score(i, j, exact=exact, calls=calls):
            calls.append(len(i))
            assert (i < j).all()  # each pair once, in one order
            return exact[i, j]

        got = lazy_complete_link(lo, hi, allowed, cut, score, batch=int(rng.integers(1, 9)))
        # what the engine did before: every pair that could reach the cut scored
        need = (hi >= cut) & allowed
        full = complete_link(np.where(need, exact, lo), allowed, cut)
        assert _same(got.labels, full)
        assert len(set(got.scored)) == len(got.scored) == sum(calls)
        assert not got.exhausted
        asked += len(got.scored)
        needed += int(np.triu(need, 1).sum())
    assert asked < needed


def test_a_budget_bounds_the_pairs_and_only_merges_less():
    rng = np.random.default_rng(11)
    for _ in range(100):
        n = int(rng.integers(3, 25))
        lo, hi, exact, allowed = _case(rng, n)
        budget = int(rng.integers(0, 12))
        got = lazy_complete_link(lo, hi, allowed, 0.4, lambda i, j, e=exact: e[i, j], budget, 4)
        assert len(got.scored) <= budget
        # every pair left unscored counts as the model's lowest score: exactly those clusters
        val = lo.copy()
        for i, j in got.scored:
            val[i, j] = val[j, i] = exact[i, j]
        assert _same(got.labels, complete_link(val, allowed, 0.4))
        # never merges a pair that full scoring keeps apart... within a cluster every pair's
        # exact probability clears the cut, as without a budget
        for c in set(got.labels.tolist()):
            idx = np.flatnonzero(got.labels == c)
            sub = exact[np.ix_(idx, idx)][np.triu_indices(len(idx), 1)]
            assert (sub >= 0.4).all()


def test_known_pairs_are_never_asked_for():
    lo = np.array([[0, 0.2, 0.1], [0.2, 0, 0.1], [0.1, 0.1, 0]])
    hi = np.array([[0, 0.9, 0.9], [0.9, 0, 0.9], [0.9, 0.9, 0]])
    known = np.zeros((3, 3), dtype=bool)
    known[0, 1] = known[1, 0] = True
    lo[0, 1] = lo[1, 0] = hi[0, 1] = hi[1, 0] = 1.0  # a reader merged 0 and 1
    asked = []

    def score(i, j):
        asked.extend(zip(i.tolist(), j.tolist(), strict=True))
        return np.full(len(i), 0.8)

    got = lazy_complete_link(lo, hi, np.ones((3, 3), dtype=bool), 0.5, score, known=known)
    assert (0, 1) not in asked and len(set(got.labels.tolist())) == 1


MODELS = Path(__file__).resolve().parent.parent / "models"


@pytest.mark.slow
@pytest.mark.skipif(
    not (MODELS / "argument" / "bundle.json").is_file(),
    reason="the shipped trunk (models/argument) is not in this checkout",
)
def test_clusters_read_the_relation_models_head_lazily_and_within_the_budget(tmp_path):
    """A stack on "rel" (the relation model's equivalence head over each perspective's lower
    states): phrasings of one point merge, other points stay apart, a pair scores the same in
    either order, each text's states are asked for once, and a budget of 0 merges nothing."""
    from perspect.core.index.config import IndexConfig
    from perspect.core.model.decision_stack import Stack
    from perspect.core.model.decisions import Decisions
    from perspect.core.result import Member
    from perspect.indexer.indexer import Indexer, Source
    from perspect.pipeline.clusters import Clusters, RelationPairs
    from perspect.pipeline.retrieve import Retrieve
    from perspect.reranker.stance_trunk import StanceTrunk
    from perspect.retriever.searcher import Searcher
    from tests.conftest import write_json

    texts = [
        "Zoos protect endangered species from extinction.",
        "Zoos keep endangered species from dying out.",
        "School uniforms reduce bullying.",
        "Uniforms at school cut down on bullying.",
        "Nuclear power is a clean source of energy.",
    ]
    pool = write_json(tmp_path / "p.json", [{"pId": i, "text": t} for i, t in enumerate(texts)])
    Indexer("r", home=tmp_path, config=IndexConfig(("bm25", "dense"))).build(
        [Source("perspectives", pool)]
    )
    searcher = Searcher("r", home=tmp_path)
    trunk = StanceTrunk.load(MODELS / "argument", serving=True)
    asked: list[str] = []

    def states(ts, ids):
        asked.extend(ids)
        return trunk.lower(ts)

    pairs = RelationPairs(trunk, states)
    ids = [str(i) for i in range(len(texts))]
    score = pairs.session(ids, texts)
    i, j = np.array([0, 0, 2, 1]), np.array([1, 4, 3, 0])
    got = score(i, j)
    assert got[0] > 0.5 > got[1] and got[2] > 0.5
    assert got[3] == pytest.approx(got[0])  # one canonical order
    assert sorted(asked) == ["0", "1", "2", "3", "4"]  # each text's states once

    stack = Stack(("cosine", "rel"), (2.0, 6.0), -5.0, 0.5)
    decisions = Decisions(equivalence=0.5, cluster=0.5, stacks={"equivalence": stack})
    members = [
        Member(k, t, 1.0 - 0.01 * n, 0.5) for n, (k, t) in enumerate(zip(ids, texts, strict=True))
    ]
    query = Retrieve(searcher, 100, 60).query("Are zoos and uniforms good?", vector=True)

    def clusters(budget):
        c = Clusters(Retrieve(searcher, 100, 60), None, decisions, None, 0.2, budget, pairs)
        got = c(query, members)
        return sorted(sorted(m.id for m in g.members) for g in got), c.last

    full, linked = clusters(None)
    assert full == [["0", "1"], ["2", "3"], ["4"]]
    assert 0 < len(linked.scored) <= 10
    none, linked = clusters(0)
    assert none == [["0"], ["1"], ["2"], ["3"], ["4"]] and linked.scored == ()
    searcher.close()
