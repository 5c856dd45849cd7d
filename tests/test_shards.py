"""An index's pools split into shards by item (perspect.retriever.shards), in one process: each
retriever's merged shard answers are the unsharded index's (the same ids in the same order, the
same scores to float rounding), for BM25, dense and ColBERT on PLAID, and so are the fused runs.
The same shards on a Ray cluster, a whole search included: tests/test_ray_serve.py."""

from __future__ import annotations

import numpy as np
import pytest

from perspect.core.errors import PerspectError
from perspect.retriever.searcher import Searcher
from perspect.retriever.shards import Shard, ShardedSearcher, merge, shard_of

QUERIES = [
    "zoos protect endangered species",
    "animal testing is needed for medicine",
    "hunting creates jobs in the countryside",
    "circuses are cruel to animals",
    "factory farms keep animals in cages",
]
N = 3


@pytest.fixture(scope="module")
def sharded(plaid_index):
    shards = [Shard("plaid", plaid_index, i, N) for i in range(N)]

    def ask(pool, q, depth, kinds):
        return [s.search(pool, q, depth, kinds)[1] for s in shards]

    s = ShardedSearcher("plaid", plaid_index, ask)
    yield s, Searcher("plaid", plaid_index), shards
    s.close()
    for x in shards:
        x.close()


def test_the_split_is_by_item_stable_and_whole(sharded):
    s, _, shards = sharded
    ids = s.store("perspectives").ids()
    counts = [x.count("perspectives") for x in shards]
    assert sum(counts) == len(ids) == 240 and min(counts) > 40  # every item in one shard
    assert [shard_of(i, N) for i in ids[:20]] == [shard_of(i, N) for i in ids[:20]]
    assert s.backend("perspectives", "colbert").mode == "plaid"


@pytest.mark.parametrize("kind", ["bm25", "dense", "colbert"])
def test_each_retriever_merges_into_the_unsharded_answer(sharded, kind):
    s, plain, _ = sharded
    for q in QUERIES:
        a = plain.search(q, "perspectives", 20, retriever=kind)
        b = s.search(q, "perspectives", 20, retriever=kind)
        assert [h.id for h in a.hits] == [h.id for h in b.hits], (kind, q)
        sa, sb = np.array([h.score for h in a.hits]), np.array([h.score for h in b.hits])
        assert np.abs(sa - sb).max() <= 1e-3 * max(1.0, np.abs(sa).max()), (kind, q)


def test_the_fused_runs_are_the_unsharded_ones(sharded):
    """(A whole search through the engine on shards: tests/test_ray_serve.py, over HTTP.)"""
    s, plain, _ = sharded
    for q in QUERIES:
        assert [h.id for h in plain.search(q, k=30).hits] == [h.id for h in s.search(q, k=30).hits]


def test_merge_is_by_score_whatever_the_order_of_arrival():
    runs = [[("a", 3.0), ("c", 1.0)], [("b", 2.0), ("d", 1.0)]]
    assert merge(runs, 3) == merge(runs[::-1], 3) == [("a", 3.0), ("b", 2.0), ("c", 1.0)]


def test_a_shard_that_does_not_exist_is_refused(plaid_index):
    with pytest.raises(PerspectError, match="shard 3 of 3"):
        Shard("plaid", plaid_index, 3, 3)
