"""Evidence links as the engine scores them: the reverse margin and the link features."""

from __future__ import annotations

import numpy as np
import pytest

from perspect.engine import Engine, link_features
from perspect.perspectrum import load_claims, load_perspectives, pool_searcher
from reranker.model import PairModel


def test_reverse_margin_is_the_lead_over_the_best_perspective_outside_the_group(
    tiny_perspectrum, tiny_pair_model, tmp_path
):
    searcher = pool_searcher(tiny_perspectrum, tmp_path / "idx", retrievers=("bm25", "dense"))
    engine = Engine(searcher, PairModel.load(tiny_pair_model))
    pids = [str(p) for p in sorted(load_perspectives(tiny_perspectrum))]
    pv = engine.dense.vectors(pids)
    ev_dense = searcher.backend("evidence", "dense")
    claim = load_claims(tiny_perspectrum, "train")[0]
    groups = [[str(p) for p in cl.pids] for cl in claim.clusters]
    chosen, items = engine.group_links(groups)
    assert any(chosen)
    for g, links in zip(groups, chosen, strict=True):
        inside = np.isin(pids, g)
        for eid, _, cos, margin in links:
            sims = pv @ ev_dense.vectors([eid])[0]
            assert eid in items
            # the stored cosine is that of the group member whose links these are
            assert np.isclose(sims[inside], cos, atol=1e-4).any()
            assert margin == pytest.approx(cos - sims[~inside].max(), abs=1e-4)
    # the group's other phrasings are not competitors: alone, a member faces them too
    alone, _ = engine.group_links([[g[0]] for g in groups])
    for (_, _, _, m_group), (_, _, _, m_alone) in zip(chosen[0], alone[0], strict=False):
        assert m_alone <= m_group + 1e-6
    searcher.close()


def test_link_features_name_the_values_links_carry():
    three = [("1", 0.02, 0.5), ("2", 0.01, 0.4)]
    f = link_features(three)
    assert set(f) == {"rrf", "cos"} and np.allclose(f["rrf"], [1.2, 0.6])
    four = [(*x, m) for x, m in zip(three, (0.1, -0.2), strict=True)]
    assert np.allclose(link_features(four)["rmargin"], [0.1, -0.2])
    five = [(*x, 0.9) for x in four]
    assert set(link_features(five)) == {"rrf", "cos", "rmargin", "ce"}
