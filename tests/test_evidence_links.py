"""Evidence links as the engine scores them: the reverse margin and the link features."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from perspect.core.datasets.perspectrum import load_claims, load_perspectives
from perspect.core.index.links import Link
from perspect.lab.pools import pool_searcher
from perspect.pipeline.engine import Engine
from perspect.pipeline.evidence import link_features
from perspect.reranker.model import PairModel


def test_reverse_margin_is_the_lead_over_the_best_perspective_outside_the_group(
    tiny_perspectrum, tiny_pair_model, tmp_path
):
    searcher = pool_searcher(tiny_perspectrum, tmp_path / "idx", retrievers=("bm25", "dense"))
    engine = Engine.load(searcher, PairModel.load(tiny_pair_model))
    pids = [str(p) for p in sorted(load_perspectives(tiny_perspectrum))]
    pv = engine.dense.vectors(pids)
    ev_dense = searcher.backend("evidence", "dense")
    claim = load_claims(tiny_perspectrum, "train")[0]
    groups = [[str(p) for p in cl.pids] for cl in claim.clusters]
    chosen, items = engine.group_links(groups)
    assert any(chosen)
    for g, links in zip(groups, chosen, strict=True):
        inside = np.isin(pids, g)
        for link in links:
            eid, cos, margin = link.evidence_id, link.cosine, link.rmargin
            sims = pv @ ev_dense.vectors([eid])[0]
            assert eid in items
            # the stored cosine is that of the group member whose links these are
            assert np.isclose(sims[inside], cos, atol=1e-4).any()
            assert margin == pytest.approx(cos - sims[~inside].max(), abs=1e-4)
    # the group's other phrasings are not competitors: alone, a member faces them too
    alone, _ = engine.group_links([[g[0]] for g in groups])
    for in_group, on_its_own in zip(chosen[0], alone[0], strict=False):
        assert on_its_own.rmargin <= in_group.rmargin + 1e-6
    searcher.close()


def test_link_features_name_the_values_links_carry():
    stored = [Link("1", 0.02, 0.5), Link("2", 0.01, 0.4)]
    f = link_features(stored)
    assert set(f) == {"rrf", "cos", "rmargin"} and np.allclose(f["rrf"], [1.2, 0.6])
    assert np.allclose(f["cos"], [0.5, 0.4]) and np.allclose(f["rmargin"], [0, 0])
    margins = [replace(x, rmargin=m) for x, m in zip(stored, (0.1, -0.2), strict=True)]
    assert np.allclose(link_features(margins)["rmargin"], [0.1, -0.2])
