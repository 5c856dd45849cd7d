"""A retriever can index some pools only: ColBERT by default skips evidence, which the pipeline
reads through BM25 + dense links; every write, search and rebuild follows the index's choice."""

from __future__ import annotations

import pytest

from perspect import api
from perspect.core.errors import PerspectError
from perspect.core.index.config import IndexConfig
from perspect.indexer.indexer import Indexer, Source
from perspect.retriever.searcher import Searcher
from tests.conftest import EVIDENCE, PERSPECTIVES, write_json


def test_colbert_indexes_the_pools_the_search_reads(tiny_colbert, tmp_path):
    cfg = api.index_config(["bm25", "colbert"], colbert_model=str(tiny_colbert))
    assert cfg.backends["colbert"]["pools"] == ["perspectives", "news"]
    assert cfg.for_pool("evidence") == ("bm25",) and cfg.for_pool("news") == ("bm25", "colbert")
    assert cfg.for_pool("documents") == ("bm25", "colbert")  # the reader's: where news goes
    every = api.index_config(
        ["bm25", "colbert"],
        colbert_model=str(tiny_colbert),
        colbert_pools=("perspectives", "evidence", "news"),
    )
    assert "pools" not in every.backends["colbert"] and every.for_pool("evidence") == (
        "bm25",
        "colbert",
    )
    with pytest.raises(PerspectError, match="unknown pool"):
        api.index_config(
            ["bm25", "colbert"], colbert_model=str(tiny_colbert), colbert_pools=("claims",)
        )
    with pytest.raises(PerspectError, match="perspectives"):
        api.index_config(
            ["bm25", "colbert"], colbert_model=str(tiny_colbert), colbert_pools=("news",)
        )

    home = tmp_path / "home"
    srcs = [
        Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES)),
        Source("evidence", write_json(tmp_path / "e.json", EVIDENCE)),
    ]
    Indexer("sub", home=home, config=cfg).build(srcs)
    s = Searcher("sub", home=home)
    version = s.version
    assert (version / "perspectives" / "colbert").is_dir()
    assert not (version / "evidence" / "colbert").exists()
    assert s.manifest["pools"]["evidence"]["retrievers"] == ["bm25"]
    assert s.manifest["pools"]["perspectives"]["retrievers"] == ["bm25", "colbert"]
    assert s.search("animals pain", pool="perspectives").hits  # hybrid over both
    assert s.search("pain receptors", pool="evidence").hits  # hybrid over what evidence has
    with pytest.raises(PerspectError, match="no colbert retriever over its evidence"):
        s.search("pain", pool="evidence", retriever="colbert")
    s.close()

    # an add and a rebuild keep the choice
    more = [{"eId": 99, "text": "Octopuses learn and feel pain, experiments show."}]
    Indexer("sub", home=home).add([Source("evidence", write_json(tmp_path / "m.json", more))])
    api.rebuild_index("sub", "colbert", str(tiny_colbert), home=home)
    s = Searcher("sub", home=home)
    assert not (s.version / "evidence" / "colbert").exists()
    assert s.pools["evidence"] == len(EVIDENCE) + 1
    assert [h.id for h in s.search("octopuses", pool="evidence").hits][:1] == ["99"]
    s.close()


def test_an_index_without_pool_options_indexes_every_pool():
    cfg = IndexConfig(("bm25", "dense", "colbert"), {"colbert": {"model": "m"}})
    assert all(
        cfg.for_pool(p) == ("bm25", "dense", "colbert") for p in ("perspectives", "evidence")
    )


def test_the_pools_are_named_in_one_table():
    """Every pool list the indexer and the pipeline read is derived from `POOL_SPECS`: a row
    changed there changes them all (issue 74: four lists had to agree by hand)."""
    from perspect.core import types
    from perspect.indexer import index_config, states
    from perspect.pipeline import pool_reasons

    assert tuple(p.name for p in types.POOL_SPECS) == types.POOLS
    assert index_config.COLBERT_POOLS is types.COLBERT_POOLS == ("perspectives", "news")
    assert states.STATE_POOLS is types.STATE_POOLS == ("perspectives", "documents")
    assert pool_reasons.REASON_POOLS == ("documents", "news")  # the reader's own first
    assert types.ARTICLE_POOLS == ("news", "documents")
    assert not any(p.articles for p in types.POOL_SPECS if p.name in ("perspectives", "evidence"))
