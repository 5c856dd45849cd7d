"""The news pool of issue 73: a large pool keeps BM25 alone, the AllSides copy is checked, and an
answer says which leanings of the press carry its perspectives (result.Spread)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perspect.core.errors import PerspectError
from perspect.core.index.config import IndexConfig
from perspect.core.result import (
    Coverage,
    Member,
    NewsItem,
    PerspectiveCluster,
    SearchResult,
    Spread,
)

SHARED_NEWS = Path(__file__).resolve().parents[2] / "shared" / "data" / "news"


def test_a_large_news_pool_keeps_bm25_alone():
    from perspect.indexer import pending

    full = IndexConfig(
        retrievers=("bm25", "dense", "colbert"),
        backends={"colbert": {"pools": ["perspectives", "news"]}, "dense": {"model": "m"}},
    )
    small = pending.lean(full, {"perspectives": 10, "news": 1_000})
    assert small is full
    big = pending.lean(full, {"perspectives": 10, "news": pending.LARGE_NEWS + 1})
    assert big.for_pool("news") == ("bm25",)
    assert big.for_pool("perspectives") == ("bm25", "dense", "colbert")
    assert big.for_pool("evidence") == ("bm25", "dense")  # as before: ColBERT never read it
    assert big.for_pool("documents") == ("bm25", "dense", "colbert")  # mined: keeps its passes
    assert big.backends["dense"]["model"] == "m"


def _cluster(pid: str, stance: str) -> PerspectiveCluster:
    m = Member(pid, f"perspective {pid}", 0.9, 0.9 if stance == "support" else 0.1)
    return PerspectiveCluster(m, (m,), stance, 0.9, 0.5)


def _news(i: int, cluster: str, leaning: str, relation: str = "strengthens") -> NewsItem:
    meta = {"outlet": f"Outlet {i}", "leaning": leaning, "date": "2019-01-01"}
    return NewsItem(f"a{i}#0", f"sentence {i}", relation, 0.8, (), cluster, relation, 0.8, meta)


def test_the_spread_counts_the_clusters_each_leaning_carries():
    clusters = (_cluster("p1", "support"), _cluster("p2", "support"), _cluster("p3", "oppose"))
    news = (
        _news(1, "p1", "left"),
        _news(2, "p1", "right"),
        _news(3, "p2", "left"),
        _news(4, "p3", "right"),
        _news(5, "p3", "centre", "weakens"),  # weakening a point is not carrying it
    )
    sp = Spread.of(clusters, news)
    assert dict(sp.carried) == {"left": 2, "centre": 0, "right": 2}
    assert sp.line == "carried by left 2 · centre 0 · right 2"
    assert sp.sides["support"] == ("left", "right") and sp.sides["oppose"] == ("right",)
    assert sp.warnings == ("the oppose side is carried by right-leaning outlets alone",)
    res = SearchResult("c", clusters, Coverage(2, 1), (), 1.0, news=news)
    j = res.to_json()
    assert j["spread"]["line"] == sp.line and j["spread"]["warnings"] == list(sp.warnings)
    assert j["news"][0]["leaning"] == "left"


def test_no_news_no_spread_line():
    sp = Spread.of((_cluster("p1", "support"),), ())
    assert sp.line is None and sp.warnings == ()
    unrated = Spread.of((_cluster("p1", "support"),), (_news(1, "p1", "unrated"),))
    assert unrated.line.endswith("unrated 1") and unrated.warnings == ()


def test_the_news_copy_is_checked(tmp_path):
    from perspect.core.datasets.fetch import NEWS_FILE, fetch_local

    src = tmp_path / "src"
    src.mkdir()
    (src / NEWS_FILE).write_bytes(b"not the AllSides file")
    with pytest.raises(PerspectError, match="not the expected file"):
        fetch_local("news", src, tmp_path / "dest")
    assert not (tmp_path / "dest" / NEWS_FILE).exists()


@pytest.mark.skipif(not SHARED_NEWS.is_dir(), reason="no ../shared/data/news on this machine")
def test_the_allsides_articles_are_copied(tmp_path):
    from perspect.core.datasets.fetch import NEWS_FILE, fetch_local

    (got,) = fetch_local("news", SHARED_NEWS, tmp_path)
    assert got == tmp_path / NEWS_FILE and got.stat().st_size > 80_000_000


MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.mark.skipif(not (MODELS / "pair").is_dir(), reason="no model bundle in this checkout")
def test_the_shipped_news_stack_reads_an_argument_above_a_report():
    """The pair model keeps the news stack fitted over the argument trunk's heads; it reads a
    sentence that argues the claim as bearing on it more than one that reports on its topic."""
    import json

    from perspect.reranker.argument import ArgumentModel
    from perspect.reranker.news_judge import COLUMNS, NewsJudge

    trunk = ArgumentModel.load(MODELS / "argument", serving=True).trunk
    judge = NewsJudge.of(trunk, json.loads((MODELS / "pair" / "manifest.json").read_text()))
    assert judge is not None and set(judge.features) <= set(COLUMNS)
    assert judge.weights.shape == (3, len(judge.features)) and 0 < judge.shown_at < 1
    claim = "Cities should ban cars from their centres"
    p = judge.probabilities([
        ("Banning cars from the city centre would make the air cleaner for everyone who lives "
         "there.", claim),
        ("Water cannon were deployed on a street east of the city centre.", claim),
    ])  # fmt: skip
    bears = p[:, 1] + p[:, 2]
    assert bears[0] > 3 * bears[1], bears
    assert p[0, 1] > p[0, 2]  # and as strengthening, not weakening
