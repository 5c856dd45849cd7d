"""The relation model's consumers, on their decisions: figures compared by value, evidence verdicts
and cited reasons from judged links, judgments stored with the links, and a news sentence that
cannot strengthen a claim and its negation. The model itself is exercised in
tests/test_relation_model.py; here its outputs are given, so each rule is checked exactly."""

from __future__ import annotations

from perspect.core.index.links import Link, Links
from perspect.core.model.decisions import RelationCuts
from perspect.core.result import EvidenceItem, Member, PerspectiveCluster
from perspect.pipeline import why
from perspect.pipeline.evidence import judged_verdict
from perspect.pipeline.quantities import conflicts, figures

CUTS = RelationCuts(entail_at=0.7, contradict_at=0.6)


def _kinds(text: str) -> set[tuple[str, float, float]]:
    return {(f.kind, f.low, f.high) for f in figures(text)}


def test_figures_are_read_with_their_kind_and_interval():
    assert ("duration", 0.0, 3 * 3600) in _kinds("The fire was under control within three hours.")
    assert ("percent", 4.2, 4.2) in _kinds("Unemployment fell to 4.2 percent.")
    assert ("money", 5e6, 5e6) in _kinds("The bridge will cost $5 million.")
    assert ("year", 1998.0, 1998.0) in _kinds("The bridge opened in 1998 after years of delay.")
    low, high = next((f.low, f.high) for f in figures("About forty firefighters came."))
    assert low < 40 < high
    assert ("count:firefighter", 40.0, float("inf")) not in _kinds("Forty firefighters came.")
    assert figures("No one was injured.") == []  # "one" as a pronoun is no count


def _conflicts_exactly(conflicting, compatible) -> None:
    for a, b in conflicting:
        assert conflicts(a, b), (a, b)
    for a, b in compatible:
        assert not conflicts(a, b), (a, b)


def test_conflicting_figures_are_found_and_compatible_ones_are_not():
    pairs = [
        ("Firefighters had it under control within three hours.", "It burned more than 8 hours."),
        ("Insurance covers 80 percent of the damage.", "Insurers pay only 30 percent of it."),
        ("The council voted on Tuesday.", "The council voted on Wednesday."),
        ("The plan passed by seven votes to two.", "The plan failed by six votes to three."),
    ]
    same = [
        ("About forty firefighters fought the blaze.", "Some 42 firefighters fought the blaze."),
        ("The meeting lasted more than four hours.", "The meeting ran for five hours."),
        ("The mill opened in 1952.", "The mill has operated since 1952."),
        ("The plant employs 300 people.", "The company cut 200 jobs."),  # different things
    ]
    _conflicts_exactly(pairs, same)


def test_amounts_in_words_and_times_ahead_are_read_and_compared():
    """Orders of magnitude ("several hundred dollars"), one unit ("within a day") and how far
    ahead ("next spring" against "will not begin for at least five years") are figures too."""
    money = next(
        f for f in figures("It will cost several hundred dollars a month.") if f.kind == "money"
    )
    assert (money.low, money.high) == (200, 999)
    assert ("count:home", 2000, 999_000) in _kinds("Thousands of homes were flooded.")
    assert ("duration", 0.0, 86_400.0) in _kinds("The strike was over within a day.")
    assert not any(f.kind == "duration" for f in figures("Patients took one pill a day."))  # a rate
    pairs = [
        ("The drug will cost about ten dollars a month.", "It will cost several hundred dollars."),
        ("Construction is due to start next spring.", "It will not begin for at least five years."),
        ("The strike lasted three days.", "The strike was over within a day."),
        ("A few dozen people came to the protest.", "Thousands of people joined the protest."),
    ]
    same = [
        ("The museum will stay closed for a week.", "The museum is shut for seven days."),
        ("Several hundred people attended.", "About 400 people attended."),
        ("The line will open this year.", "The line will open next month."),
        ("The factory will stay open until 2030.", "The factory will not close before 2030."),
    ]
    _conflicts_exactly(pairs, same)


def test_a_judged_link_supports_only_when_its_sentence_entails():
    def link(e, c):
        return Link("e", 0.1, 0.5, why=(0, 10), entail=e, contradict=c)

    assert judged_verdict(link(0.9, 0.05), CUTS) == "supports"
    assert judged_verdict(link(0.5, 0.1), CUTS) == "related"
    assert judged_verdict(link(0.1, 0.8), CUTS) == "contradicts"
    assert judged_verdict(link(0.8, 0.7), CUTS) == "contradicts"  # never "supports" then
    assert judged_verdict(Link("e", 0.1, 0.5), CUTS) == "related"  # not judged


PARA = "Zoos are popular. Many species survive only through zoo breeding. Tickets cost a lot."


def _cluster(evidence) -> PerspectiveCluster:
    m = Member("p", "Zoos save species from extinction.", 0.9, 0.9)
    return PerspectiveCluster(m, (m,), "support", 0.9, 0.8, tuple(evidence))


def test_the_cited_reason_is_an_entailing_sentence_or_none():
    s = PARA.index("Many")
    span = (s, PARA.index(".", s) + 1)
    backing = EvidenceItem("e1", PARA, 0.9, "supports")
    stored = [{"e1": (span, 0.4, 0.92, 0.01)}]
    (got,) = why.cite([_cluster([backing])], None, None, stored, CUTS)
    assert got is not None and got.sentence.startswith("Many species")
    # the same paragraph, but its sentence does not entail the perspective: nothing is cited,
    # not the sentence with the most words in common
    related = EvidenceItem("e1", PARA, 0.9, "related")
    (got,) = why.cite([_cluster([related])], None, None, [{"e1": (span, 0.9, 0.3, 0.1)}], CUTS)
    assert got is None
    contra = EvidenceItem("e1", PARA, 0.9, "contradicts")
    (got,) = why.cite([_cluster([contra])], None, None, [{"e1": (span, 0.9, 0.1, 0.9)}], CUTS)
    assert got is None


def test_judgments_are_stored_with_the_links(tmp_path):
    links = Links(tmp_path, readonly=False)
    links.replace([("p1", [Link("e1", 0.2, 0.5, why=(0, 12), why_cosine=0.5)])])
    assert links.get(["p1"])["p1"][0].entail is None
    links.judge([("p1", "e1", 0.83, 0.04)])
    links.close()
    got = Links(tmp_path).get(["p1"])["p1"][0]
    assert (got.entail, got.contradict) == (0.83, 0.04) and got.why == (0, 12)


class _Echo:
    """A judge with a fixed rule, so the news stage's own rule is checked exactly: it
    'strengthens' any claim that shares its first word with the sentence, negated or not (the
    confusion issue 41 saw: one sentence shown as strengthening a claim and its negation)."""

    def compare(self, pairs, setting="doc"):
        from perspect.reranker.comparator import Relation

        out = []
        for a, b in pairs:
            same = a.split()[0].lower() == b.split()[0].lower()
            p = (0.9 if same else 0.1) - 0.2 * (" not " in b)  # a little less for a negation
            out.append(Relation(p, 0.05, 0.05, "strengthen" if same else "neither"))
        return out


def test_a_sentence_that_strengthens_a_claim_and_its_negation_is_not_shown():
    from perspect.pipeline.news import one_sided

    sentence = "Zoos protect rare animals."
    assert _Echo().compare([(sentence, "Zoos should stay open")])[0].relation == "strengthen"
    assert _Echo().compare([(sentence, "Zoos should not stay open")])[0].relation == "strengthen"
    # the claim: shown (it bears on the claim more than on its negation) ...
    (got,) = one_sided(_Echo(), [sentence], "Zoos should stay open")
    assert got.relation == "strengthen"
    # ... the negation: not shown, though the judge alone calls it "strengthen" there too
    (got,) = one_sided(_Echo(), [sentence], "Zoos should not stay open")
    assert got.relation == "neither"


class _Fixed:
    """An inference reader with fixed P(entail, neutral, contradict) per premise, and the compare
    cuts of the shipped reader's size, so `judge_pairs`' own rule is checked exactly."""

    def __init__(self, probs):
        self.probs = probs
        self.manifest = {"decisions": {"compare": {"entail_at": 0.40, "contradict_at": 0.43}}}

    def joint(self, head, left, right):
        import numpy as np

        assert head == "nli"
        rows = [self.probs.get(x, self.probs.get(y)) for x, y in zip(left, right, strict=True)]
        return np.array(rows)


def test_compare_reads_the_likelier_relation_when_both_cuts_are_cleared():
    from perspect.pipeline.compare import CompareConfig, judge_pairs

    a = ["The team lost the final.", "The mayor opposed it.", "Rents rose 5 percent.", "Rain."]
    b = ["The team did not win the final.", "The mayor backed it.", "Rents rose 9 percent.", "Sun."]
    reader = _Fixed({
        a[0]: (0.51, 0.0, 0.49),  # both cleared, entailment likelier: an agreement
        a[1]: (0.45, 0.0, 0.55),  # both cleared, contradiction likelier: a dispute
        a[2]: (0.30, 0.4, 0.30),  # neither cleared, but the figures conflict: a dispute
        a[3]: (0.10, 0.8, 0.10),  # neither cleared: neither
    })  # fmt: skip
    got = judge_pairs(a, b, [(k, k) for k in range(4)], None, CompareConfig(), reader)
    assert [None if g is None else g[0] for g in got] == [
        "strengthens", "weakens", "weakens", None,
    ]  # fmt: skip


def test_parsed_figures_that_conflict_are_a_dispute_even_where_the_reader_entails():
    """The reader reads "about ten dollars" and "several hundred dollars" as near neighbours
    (P(entail) .68 on the drug trial case of bench/compare_cases.json): the parse decides."""
    from perspect.pipeline.compare import CompareConfig, judge_pairs

    a = ["The drug would cost about ten dollars a month.", "The drug costs ten dollars a month."]
    b = ["The drug will cost several hundred dollars a month.", "A month of the drug costs $10."]
    reader = _Fixed({a[0]: (0.68, 0.22, 0.10), a[1]: (0.90, 0.05, 0.05)})
    got = judge_pairs(a, b, [(0, 0), (1, 1)], None, CompareConfig(), reader)
    assert got[0] is not None and got[0][0] == "weakens" and got[0][2]  # with the figures' spans
    assert got[1] is not None and got[1][0] == "strengthens"  # the same figure: the reader's call


def test_listed_opposites_with_one_negation_agree_and_without_dispute():
    """A complement with one of the two sentences negated says the same thing; opposites with
    neither negated contradict; a contrary under one negation, or different quantifiers, give no
    reading (the model's is kept)."""
    from perspect.pipeline.polarity import reading

    assert reading("The council rejected the plan.", "The council did not approve it.") == "agree"
    assert reading("The factory will stay open.", "The factory won't close.") == "agree"
    assert reading("The bill was turned down.", "The senate did not accept the bill.") == "agree"
    assert reading("The mayor supported the plan.", "The mayor opposed the plan.") == "dispute"
    assert reading("Prices rose by 5 percent.", "Prices fell by 5 percent.") == "dispute"
    assert reading("The appeal was rejected.", "The court accepted the appeal.") == "dispute"
    assert reading("The team lost.", "The team did not lose.") is None  # no opposite: the model
    assert reading("Prices did not rise.", "Prices fell.") is None  # not rising is not falling
    assert reading("Only a third passed the exam.", "Two thirds failed the exam.") is None
    assert reading("The meeting lasted four hours.", "The council met for four hours.") is None
    # the opposites said of two different things: neither an agreement nor a dispute
    assert reading("The north gate will stay open.", "The south gate will close.") == "different"
    assert reading("Sales of electric cars rose.", "Sales of diesel cars fell.") == "different"
    assert reading("It passed its inspection.", "It failed three inspections.") == "dispute"
    assert reading("It will stay open until May.", "It will not close before May.") == "agree"


def test_a_negated_antonym_is_an_agreement_even_where_the_reader_reads_a_contradiction():
    from perspect.pipeline.compare import CompareConfig, judge_pairs

    a = ["The factory will stay open until 2030.", "Side effects were mild and rare."]
    b = ["The factory will not close before 2030.", "Patients had severe side effects."]
    reader = _Fixed({a[0]: (0.03, 0.02, 0.95), a[1]: (0.70, 0.20, 0.10)})
    got = judge_pairs(a, b, [(0, 0), (1, 1)], None, CompareConfig(), reader)
    assert [g[0] for g in got] == ["strengthens", "weakens"]
    # two different things: neither, though the reader reads a contradiction
    a, b = ["The east wing will stay open."], ["The west wing will close."]
    reader = _Fixed({a[0]: (0.02, 0.03, 0.95)})
    assert judge_pairs(a, b, [(0, 0)], None, CompareConfig(), reader) == [None]
