"""What a reader sees of an answer, measured: sides shown or unclear, cited reasons, verdicts.

The paper's T1-T5 (perspect.lab.perspectrum_eval) score the pipeline's decisions; these score
what the product shows on top of them, and fit the cuts that decide it on held-out train claims:
the unclear margin around the side cut (`fit_unclear`), the evidence verdict (`fit_verdict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perspect.core.datasets.metrics import binary_prf
from perspect.core.datasets.perspectrum import Claim
from perspect.core.model.decision_stack import Stack
from perspect.core.model.decisions import Decisions
from perspect.core.result import Member, PerspectiveCluster
from perspect.pipeline.evidence import ranked_links
from perspect.reranker.roles import pair_for

GRID = np.round(np.arange(0.02, 0.98, 0.01), 3)  # as perspectrum_eval's cuts
KEEP_SHARES = (100, 80, 60, 40, 20)  # the coverage table: accuracy of the most confident sides
UNCLEAR_MARGINS = np.round(np.arange(0.0, 0.5, 0.005), 3)
UNCLEAR_MIN_KEPT = 0.2  # the margin never hides more than 80 % of the tune claims' perspectives


def fit_unclear(t2: list[tuple[bool, float]], side_cut: float, target: float) -> float:
    """The smallest margin around the side cut that leaves the sides still shown (P(support)
    at least this far from the cut) right at least `target` of the time on these rows (the
    held-out train claims'), hiding at most 80 %; the widest such margin when none reaches it."""
    y = np.array([g for g, _ in t2], dtype=bool)
    q = np.array([p for _, p in t2], dtype=np.float64)
    conf, right = np.abs(q - side_cut), (q >= side_cut) == y
    best = 0.0
    for u in UNCLEAR_MARGINS:
        kept = conf >= u
        if kept.mean() < UNCLEAR_MIN_KEPT:
            break
        best = float(u)
        if right[kept].mean() >= target:
            return best
    return best


def side_coverage(
    t2: list[tuple[bool, float]], side_cut: float, unclear: float | None
) -> dict[str, Any]:
    """The sides as a reader sees them (cut `side_cut`, tuned for accuracy): accuracy, macro-F1
    and AUROC; the accuracy of the most confident 100 / 80 / 60 / 40 / 20 %; and, at the
    unclear margin, the share shown as unclear and the accuracy of the sides still shown."""
    y = np.array([g for g, _ in t2], dtype=bool)
    q = np.array([p for _, p in t2], dtype=np.float64)
    conf, right = np.abs(q - side_cut), (q >= side_cut) == y
    order = np.argsort(-conf, kind="stable")
    table = {
        str(s): round(100 * float(right[order[: max(1, round(len(y) * s / 100))]].mean()), 2)
        for s in KEEP_SHARES
    }
    shown = conf >= (unclear or 0.0)
    detail = stance_detail(t2, side_cut)
    return {
        "cut": side_cut,
        "accuracy": detail["accuracy"],
        "macro_f1": detail["macro_f1"],
        "auroc": detail["auroc"],
        "accuracy_when_kept": table,
        "unclear_margin": unclear,
        "unclear_share": round(100 * float(1 - shown.mean()), 2),
        "shown_accuracy": round(100 * float(right[shown].mean()), 2) if shown.any() else None,
    }


def _shown_links(rows, stack: Stack | None, per_cluster: int = 3):
    """(score, in gold) of each paragraph a search shows for a gold cluster (its top links)."""
    out = []
    for g, links in rows:
        scores, order, _ = ranked_links(links, stack, (0.0, 0.0, 1))
        gold = {str(x) for x in g}
        out += [(float(scores[i]), links[i].evidence_id in gold) for i in order[:per_cluster]]
    return out


def fit_verdict(rows, stack: Stack | None) -> float:
    """The evidence score above which a shown paragraph is called "supports": the cut with the
    best accuracy against the gold backing paragraphs on these (held-out train) clusters."""
    shown = _shown_links(rows, stack)
    s = np.array([x for x, _ in shown])
    y = np.array([g for _, g in shown], dtype=bool)
    return float(max(GRID, key=lambda t: float(((s >= t) == y).mean()))) if len(s) else 0.5


def verdict_accuracy(rows, d: Decisions) -> dict[str, Any] | None:
    """How often the verdict a search shows ("supports" or "related") is right against gold
    backing, beside always answering the majority class, over the paragraphs shown."""
    stack = d.stack("evidence")
    got, right_rule = [], []
    for g, links in rows:
        scores, order, backed = ranked_links(links, stack, d.evidence_rule)
        gold = {str(x) for x in g}
        for rank, i in enumerate(order[:3]):
            says = rank in backed if d.evidence_verdict is None else scores[i] >= d.evidence_verdict
            got.append((says, links[i].evidence_id in gold))
            right_rule.append((rank in backed) == (links[i].evidence_id in gold))
    if not got:
        return None
    y = np.array([g for _, g in got], dtype=bool)
    says = np.array([x for x, _ in got], dtype=bool)
    return {
        "paragraphs": len(got),
        "accuracy": round(100 * float((says == y).mean()), 2),
        "majority_class": round(100 * float(max(y.mean(), 1 - y.mean())), 2),
        "backing_rule_accuracy": round(100 * float(np.mean(right_rule)), 2),
        "said_supports": round(100 * float(says.mean()), 2),
        "gold_backing": round(100 * float(y.mean()), 2),
    }


def cited(engine, group: list[str], perspectives: dict[int, str]):
    """(paragraph of the cited sentence, top paragraph) of a gold cluster, as a search shows
    them: its evidence, then pipeline.why over it."""
    items = engine.evidence([group])[0]
    if not items:
        return None, None
    rep = Member(group[0], perspectives[int(group[0])], 1.0, 0.5)
    cluster = PerspectiveCluster(rep, (rep,), "support", 1.0, 1.0, tuple(items))
    reason = engine.evidence_stage.with_reasons([cluster])[0].why
    return (reason.evidence if reason else None), items[0].id


def citation_rates(cites) -> dict[str, Any] | None:
    """How often the cited sentence lies in a gold evidence paragraph of the perspective, beside
    the same rate for the first sentence of the top paragraph (which lies in that paragraph)."""
    rows = [(set(map(str, g)), c, top) for g, c, top in cites if top is not None]
    if not rows:
        return None
    return {
        "clusters": len(rows),
        "cited_in_gold": round(100 * sum(c in g for g, c, _ in rows) / len(rows), 2),
        "first_sentence_of_top_paragraph": round(
            100 * sum(top in g for g, _, top in rows) / len(rows), 2
        ),
    }


def stance_rows(model, claims: Sequence[Claim], perspectives: dict[int, str]):
    """(gold is support, P(support)) for every gold perspective of `claims`: T2's rows without
    the rest of the pipeline (what fitting the unclear margin needs)."""
    rows: list[tuple[bool, float]] = []
    for c in claims:
        gp = c.gold_sides(perspectives)
        if gp:
            probs = model.predict(
                [pair_for("stance", c.text, perspectives[p]) for p, _ in gp], ["stance"]
            )["stance"]
            rows.extend((s, float(q)) for (_, s), q in zip(gp, probs, strict=True))
    return rows


def stance_detail(t2: list[tuple[bool, float]], threshold: float) -> dict[str, float]:
    """What T2's binary F1 hides. With supports at about half of the gold perspectives, calling
    everything "support" scores F1 ~67 with no model at all, and an F1-tuned threshold drifts
    towards that. Accuracy, macro-F1 over both stances and AUROC show the model's own skill."""
    from sklearn.metrics import f1_score, roc_auc_score

    y = np.array([g for g, _ in t2], dtype=bool)
    p = np.array([q for _, q in t2], dtype=np.float64)
    hat = p >= threshold
    both = len(set(y.tolist())) == 2
    return {
        "accuracy": round(100 * float((hat == y).mean()), 2),
        "macro_f1": round(100 * float(f1_score(y, hat, average="macro", zero_division=0)), 2),
        "auroc": round(100 * float(roc_auc_score(y, p)), 2) if both else float("nan"),
        "support_share": round(100 * float(y.mean()), 2),
        "all_support_f1": round(100 * binary_prf(y.tolist(), [True] * len(y)).f1, 2),
    }
