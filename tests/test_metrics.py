from __future__ import annotations

import pytest

from perspect.core.datasets.metrics import PRF, binary_prf, claim_pr, macro


def test_claim_pr_hand_made():
    clusters = [[1, 2, 3], [4], [5, 6]]
    # 1 and 2 hit the same cluster; 9 is wrong; 4 hits a second cluster
    p, r = claim_pr([1, 2, 9, 4], clusters)
    assert p == pytest.approx(3 / 4) and r == pytest.approx(2 / 3)
    assert claim_pr([], clusters) == (0.0, 0.0)
    assert claim_pr([1, 1, 1], clusters) == (1.0, pytest.approx(1 / 3))  # duplicates count once


def test_macro_average_then_f1():
    m = macro([(1.0, 0.5), (0.5, 0.5)])
    assert (m.precision, m.recall) == (0.75, 0.5)
    assert m.f1 == pytest.approx(2 * 0.75 * 0.5 / 1.25)
    assert macro([]).f1 == 0.0
    assert PRF(0.5, 0.25).to_json() == {"precision": 50.0, "recall": 25.0, "f1": 33.33}


def test_binary_prf():
    m = binary_prf([True, True, False, False], [True, False, True, False])
    assert (m.precision, m.recall) == (0.5, 0.5)
    assert binary_prf([False], [False]).f1 == 0.0


def test_claim_without_gold_is_an_error():
    with pytest.raises(ValueError):
        claim_pr([1], [])
