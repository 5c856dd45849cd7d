"""A claim's second reading (perspect.pipeline.valence): what the rule recognises, and what the
stance decision does with it."""

from __future__ import annotations

import pytest

from perspect.pipeline import valence


@pytest.mark.parametrize(
    ("claim", "text", "sign"),
    [
        ("Zoos should be closed", "Zoos are good", -1),
        ("Cryptocurrency should be banned.", "Cryptocurrency is good", -1),
        ("Smartphones should be banned in schools", "Smartphones in schools are good", -1),
        ("Ban junk food from schools", "Junk food in schools is good", -1),
        ("We should ban boxing", "Boxing is good", -1),
        ("We must not allow fracking", "Fracking is good", -1),
        ("Smoking should further be restricted", "Smoking is good", -1),
        ("Intellectual property rights have to be abolished", "Intellectual property rights are good", -1),
        ("Prostitution Should Be Legal", "Prostitution is good", 1),
        ("Cannabis should be legalised", "Cannabis is good", 1),
        ("Taking food thrown out by supermarkets should not be illegal",
         "Taking food thrown out by supermarkets is good", 1),
        ("Nuclear power should not be phased out", "Nuclear power is good", 1),
        ("Social media companies should be regulated like tobacco companies",
         "Social media companies are good", -1),
    ],
)  # fmt: skip
def test_a_claim_that_acts_on_a_thing_reads_as_that_things_merits(claim, text, sign):
    got = valence.of(claim)
    assert got is not None and (got.text, got.sign) == (text, sign)


@pytest.mark.parametrize(
    "claim",
    [
        "Voting should be compulsory",  # the merits of voting are not those of compelling it
        "Animals should have lawful rights",
        "Religion does more harm than good",  # already about merits: one reading is enough
        "It should be banned",
        "There should be a presumption in favour of publication",
        "",
    ],
)
def test_a_claim_the_rule_does_not_recognise_has_no_second_reading(claim):
    assert valence.of(claim) is None
