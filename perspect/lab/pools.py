"""Scratch indexes of the PERSPECTRUM pools: training mines negatives with them, evaluation runs
the pipeline on them."""

from __future__ import annotations

from pathlib import Path

from perspect.core.datasets.fetch import evidence_pool_file
from perspect.core.datasets.perspectrum import PERSPECTIVES
from perspect.core.index.config import IndexConfig
from perspect.indexer.indexer import Indexer, Source
from perspect.retriever.searcher import Searcher


def pool_searcher(
    folder: str | Path,
    home: str | Path,
    name: str = "perspectrum",
    retrievers: tuple[str, ...] = ("bm25",),
    links: bool = True,
    stance_states: bool | None = None,
):
    """An index of the PERSPECTRUM pools in `home` (a scratch folder), opened for search:
    training mines negatives with it and evaluation runs the pipeline on it. `stance_states`
    (default: as `links`): store the stance trunk's states, which only the pipeline reads."""
    srcs = [Source("perspectives", Path(folder) / PERSPECTIVES)]
    if evidence_pool_file(folder) is not None:
        srcs.append(Source("evidence", evidence_pool_file(folder)))
    Indexer(
        name,
        home=home,
        config=IndexConfig(
            tuple(retrievers),
            links=links,
            stance_states=links if stance_states is None else stance_states,
        ),
    ).build(srcs)
    return Searcher(name, home=home)
