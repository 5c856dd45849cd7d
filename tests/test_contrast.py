"""The stance contrast test (perspect.lab.contrast): negated claims, flip rate."""

from __future__ import annotations

import pytest

from perspect.core.datasets.negation import negate
from perspect.core.datasets.perspectrum import Claim, Cluster
from perspect.lab.contrast import stance_flips


@pytest.mark.parametrize(
    ("claim", "negated"),
    [
        ("Vaccination must be made compulsory", "Vaccination must not be made compulsory"),
        ("Prostitution Should Be Legal", "Prostitution Should Not Be Legal"),
        ("Make-up is bad for us", "Make-up is not bad for us"),
        ("Science can determine human values", "Science cannot determine human values"),
        ("Ban junk food from schools", "Do not ban junk food from schools"),
        (
            "Goal line technology has to be adopted",
            "Goal line technology does not have to be adopted",
        ),
        ("Technology promotes materialism.", "It is not true that technology promotes materialism"),
    ],
)
def test_negate_by_rule(claim, negated):
    assert negate(claim) == negated


class _Echo:
    """A stance "model" that reads only the perspective: what the contrast test exposes."""

    def predict(self, pairs, tasks):
        import numpy as np

        return {"stance": np.array([0.1 if "good" in b else 0.9 for _, b in pairs])}


class _Reader(_Echo):
    """A stance "model" that reads the claim too: it flips with a negation."""

    def predict(self, pairs, tasks):
        import numpy as np

        p = super().predict(pairs, tasks)["stance"]
        neg = np.array([" not " in f" {a} " for a, _ in pairs])
        return {"stance": np.where(neg, 1 - p, p)}


def test_flip_rate_tells_topic_readers_from_claim_readers():
    claims = [
        Claim(
            1,
            "Zoos should be banned",
            "dev",
            (Cluster((1,), "UNDERMINE", ()), Cluster((2,), "SUPPORT", ())),
        ),
    ]
    persp = {1: "zoos are good for species", 2: "zoos are cruel"}
    topic = stance_flips(_Echo(), claims, persp, 0.5)
    assert topic["flip_rate"] == 0.0 and topic["pairs"] == 2
    reader = stance_flips(_Reader(), claims, persp, 0.5)
    assert reader["flip_rate"] == 100.0 and reader["both_right"] == 100.0


def test_contrast_stance_pairs_swap_the_label_under_the_negated_claim(tiny_perspectrum):
    import random

    from perspect.core.datasets.perspectrum import load_claims, load_perspectives
    from perspect.lab.train.pair_data import build_examples

    claims = load_claims(tiny_perspectrum, "train")
    persp = load_perspectives(tiny_perspectrum)
    plain = build_examples(claims, persp, {}, None, random.Random(1), ["stance"])["stance"]
    both = build_examples(
        claims, persp, {}, None, random.Random(1), ["stance"], contrast_stance=True
    )["stance"]
    assert len(both) == 2 * len(plain)
    by_pair = {(e.a, e.b): e.label for e in both}
    for e in plain:
        assert by_pair[(negate(e.a), e.b)] == 1.0 - e.label
