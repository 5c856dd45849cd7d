"""Real PERSPECTRUM data from ../shared/data (skipped with a reason when absent)."""

from __future__ import annotations

import pytest

from perspect import Perspect
from perspect.core.datasets.metrics import claim_pr, macro
from perspect.core.datasets.perspectrum import load_claims, load_evidence, load_perspectives
from perspect.indexer.indexer import Indexer, Source

pytestmark = pytest.mark.data


def test_loaders_match_the_documented_counts(perspectrum_dir):
    assert len(load_perspectives(perspectrum_dir)) == 11_112
    assert len(load_claims(perspectrum_dir, "train")) == 541
    dev = load_claims(perspectrum_dir, "dev")
    assert len(dev) == 139 and sum(len(c.clusters) for c in dev) == 914
    assert len(load_evidence(perspectrum_dir)) == 3_981
    with pytest.raises(Exception, match="held out"):
        load_claims(perspectrum_dir, "test")


def test_full_pool_index_finds_gold_perspectives(perspectrum_dir, tmp_path):
    Indexer("p", home=tmp_path).build(
        [
            Source("perspectives", perspectrum_dir / "perspective_pool_v1.0.json"),
            Source("evidence", perspectrum_dir / "evidence_pool_partial_v1.0.json"),
        ]
    )
    p = Perspect.open("p", home=tmp_path)
    assert p.pools == {"perspectives": 11_112, "evidence": 3_981}
    dev = load_claims(perspectrum_dir, "dev")[:40]
    scores = [
        claim_pr([int(h.id) for h in p.retrieve(c.text, k=10).hits], [cl.pids for cl in c.clusters])
        for c in dev
    ]
    # BM25 is a weak but real baseline: well above chance (~0.1 % of the pool is gold per claim)
    assert macro(scores).recall > 0.3
