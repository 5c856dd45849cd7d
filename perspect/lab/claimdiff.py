"""ClaimDiff: training the comparator with its fitted decisions, and scoring it as the paper does.

Scores (Ko et al. 2023, Table 2): ClaimDiff-S and -W are two binary tasks over the same pairs; each
reports AUROC of its probability and precision / recall / F1 of its positive class at the fitted
threshold. Rationales: token F1 between predicted and gold rationale words of A, per positive
pair, averaged (the paper's TF1, with perspect.core.datasets.claimdiff.tokens in place of spaCy's).
Thresholds come from the `tune` topics (annotated pairs for the "pairs" setting, the same topics
mixed with unrelated pairs for "doc"), never from the split that is reported.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.datasets import claimdiff as cd
from perspect.core.datasets.metrics import PRF, binary_prf
from perspect.core.errors import PerspectError
from perspect.core.model import bundle
from perspect.core.progress import NullReporter, Reporter
from perspect.lab.relation_fit import PRECISION, held_split, precision_cut
from perspect.lab.train.relation_data import (
    NLI_FILES,
    inference_rows,
    nli_report,
    numeric_swaps,
    paraphrase_rows,
)

TASKS = {"S": "strengthen", "W": "weaken"}


@dataclass(frozen=True)
class BinaryScore:
    auroc: float
    prf: PRF
    threshold: float
    positives: int

    def to_json(self) -> dict[str, float]:
        return {"auroc": round(self.auroc, 4), **self.prf.to_json(), "positives": self.positives}


@dataclass(frozen=True)
class ClaimDiffScores:
    split: str
    pairs: int
    S: BinaryScore
    W: BinaryScore
    token_f1: float | None  # None: rationales not scored (document-like mixes)
    rationale_pairs: int
    whole_a_f1: float | None = None  # baseline: every word of A as the rationale

    def to_json(self) -> dict[str, Any]:
        out = {
            "split": self.split,
            "pairs": self.pairs,
            "S": self.S.to_json(),
            "W": self.W.to_json(),
        }
        if self.token_f1 is not None:
            out["rationale"] = {
                "token_f1": round(100 * self.token_f1, 2),
                "pairs": self.rationale_pairs,
                "whole_claim_a_token_f1": round(100 * (self.whole_a_f1 or 0.0), 2),
            }
        return out


@dataclass(frozen=True)
class Scored:
    """A model's raw outputs on a set of pairs, so thresholds can be tried without re-running it."""

    pairs: tuple[cd.ClaimPair, ...]
    probs: np.ndarray  # (n, 3) in RELATIONS order
    tokens: tuple[tuple[tuple[int, int, float], ...], ...]


def score(model, pairs: Sequence[cd.ClaimPair], rationale: bool = True) -> Scored:
    probs, toks = model.scores([(p.claim_a, p.claim_b) for p in pairs], rationale=rationale)
    return Scored(tuple(pairs), probs, tuple(tuple(t) for t in toks))


def _auroc(gold: np.ndarray, p: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(gold, p)) if 0 < gold.sum() < len(gold) else float("nan")


def best_threshold(gold: np.ndarray, p: np.ndarray) -> float:
    """The cut on `p` with the best F1 of the positive class (ties: the higher cut)."""
    if not gold.any():
        return 0.5
    order = np.argsort(-p)
    tp = np.cumsum(gold[order])
    k = np.arange(1, len(p) + 1)
    f1 = 2 * tp / (k + gold.sum())
    i = int(np.argmax(f1))
    nxt = p[order[i + 1]] if i + 1 < len(p) else 0.0
    return float((p[order[i]] + nxt) / 2)


def token_f1(pred: str | Sequence[str], gold: Sequence[str]) -> float:
    pt = Counter(t for x in ([pred] if isinstance(pred, str) else pred) for t in cd.tokens(x))
    gt = Counter(t for x in gold for t in cd.tokens(x))
    common = sum((pt & gt).values())
    if not common:
        return 0.0
    p, r = common / sum(pt.values()), common / sum(gt.values())
    return 2 * p * r / (p + r)


def rationale_f1(s: Scored, cut: float) -> tuple[float, int]:
    from perspect.reranker.comparator import rationale_spans

    vals = []
    for p, tk in zip(s.pairs, s.tokens, strict=True):
        if p.relation == "neither" or not p.rationale:
            continue
        spans = rationale_spans(p.claim_a, tk, cut)
        vals.append(token_f1([p.claim_a[a:b] for a, b in spans], p.rationale))
    return (float(np.mean(vals)) if vals else 0.0), len(vals)


def evaluate(s: Scored, thresholds: dict[str, float], cut: float, split: str) -> ClaimDiffScores:
    rel = np.array([p.relation for p in s.pairs])
    out = {}
    for key, name in TASKS.items():
        col = cd.RELATIONS.index(name)
        gold = rel == name
        pred = s.probs[:, col] >= thresholds[name]
        out[key] = BinaryScore(
            _auroc(gold, s.probs[:, col]),
            binary_prf(gold.tolist(), pred.tolist()),
            thresholds[name],
            int(gold.sum()),
        )
    if not any(s.tokens):
        return ClaimDiffScores(split, len(s.pairs), out["S"], out["W"], None, 0)
    tf1, n = rationale_f1(s, cut)
    whole = [
        token_f1(p.claim_a, p.rationale) for p in s.pairs if p.relation != "neither" and p.rationale
    ]
    return ClaimDiffScores(
        split, len(s.pairs), out["S"], out["W"], tf1, n, float(np.mean(whole)) if whole else None
    )


def fit_decisions(tune: Scored, tune_doc: Scored) -> dict[str, Any]:
    """Thresholds per setting and the rationale cut, all on the tune topics."""
    th = {}
    for setting, s in (("pairs", tune), ("doc", tune_doc)):
        rel = np.array([p.relation for p in s.pairs])
        th[setting] = {
            name: round(best_threshold(rel == name, s.probs[:, cd.RELATIONS.index(name)]), 4)
            for name in TASKS.values()
        }
    cuts = [round(c, 2) for c in np.arange(0.2, 0.75, 0.05)]
    cut = max(cuts, key=lambda c: (rationale_f1(tune, c)[0], -abs(c - 0.5)))
    return {"thresholds": th, "rationale_threshold": cut}


# -- the joint reader's inference head --------------------------------------------------------------
INFERENCE_SEED = 29  # the relation model's held-out split: both report on the same 3,000 pairs
INFERENCE_REPORT = 3000
NUMERIC_SWAPS = 1500
PARAPHRASES = 3000


def _inference_rows(folder: Path | None, prof: CmpProfile) -> dict[str, Any] | None:
    """Training rows (held-in pairs and numeric swaps), the reported held-out rows and the rows
    the cuts are fitted on; None where the folder lacks the pairs."""
    if folder is None or not all((folder / f"{n}.jsonl").is_file() for n in NLI_FILES):
        return None
    train, held = inference_rows(folder)  # a small folder: three quarters of held reported
    rng = random.Random(prof.seed)
    train += numeric_swaps(train, rng, NUMERIC_SWAPS) + paraphrase_rows(train, rng, PARAPHRASES)
    report, tune = held_split(folder, INFERENCE_SEED, min(INFERENCE_REPORT, len(held) * 3 // 4))
    cap = prof.max_pairs
    return {
        "train": train[:cap] if cap else train,
        "report": report[:cap] if cap else report,
        "tune": tune[:cap] if cap else tune,
        "fingerprints": [
            {"file": f"inference/{n}.jsonl", "sha256": bundle.sha256_file(folder / f"{n}.jsonl")}
            for n in NLI_FILES
        ],
    }


def fit_inference(model, report, tune) -> dict[str, Any]:
    """The compare cuts (P(entail), P(contradict) at 80 % precision on the tune rows) and the
    accuracy on the reported rows (`perspect.lab.relation_fit`'s split and rule)."""
    p = model.inference([(r[1], r[2]) for r in tune])
    y = np.array([r[3] for r in tune])
    e = precision_cut(y == 0, p[:, 0], PRECISION)
    c = precision_cut(y == 2, p[:, 2], PRECISION)
    compare = {
        "entail_at": e["cut"],
        "contradict_at": c["cut"],
        "fitted_on": f"{len(tune)} held-out inference pairs (not reported)",
        "entail": e,
        "contradict": c,
    }
    held = nli_report(model.inference([(r[1], r[2]) for r in report]), report)
    return {"decisions": {"compare": compare}, "held": held}


# -- training ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CmpProfile:
    name: str
    rank: int = 16
    alpha: float = 32.0
    lr: float = 1e-3
    epochs: float = 4.0
    max_minutes: float = 25.0  # 4 epochs take 7.5 min here; the cap only guards slow machines
    unrelated_ratio: float = 1.0  # unrelated pairs per annotated fit pair
    rationale_weight: float = 1.0
    max_pairs: int | None = None  # quick runs
    batch_size: int = 16
    seed: int = 13
    extra: dict[str, Any] = field(default_factory=dict)
    # the joint reader (issue 41): the inference head trained beside ClaimDiff on the held-in
    # inference pairs for `inference_epochs`, ClaimDiff's rows repeated to keep their `epochs`
    inference: bool = False
    inference_epochs: float = 2.0


PROFILES = {
    "quick": CmpProfile(
        "quick",
        rank=4,
        epochs=1.0,
        max_minutes=0.5,
        max_pairs=48,
        unrelated_ratio=0.25,
        batch_size=8,
    ),
    # rank 32, lr 5e-4, batches of 32: the study's recipe (bench/STUDIES.md, "The joint reader"),
    # 2 epochs of 54k inference pairs, about 35 min here; ClaimDiff for 8 epochs, as many steps
    # as the ClaimDiff-only profile's 4 epochs of batches of 16 (4 epochs here: weaken's AUROC
    # fell from .66 to .60)
    "full": CmpProfile(
        "full",
        rank=32,
        alpha=64.0,
        lr=5e-4,
        epochs=8.0,
        max_minutes=60.0,
        batch_size=32,
        inference=True,
    ),
    # the comparator before the joint reader: ClaimDiff alone (rank 16, 7.5 min)
    "claimdiff": CmpProfile("claimdiff"),
}


def resolve_profile(profile: str | CmpProfile, **overrides: Any) -> CmpProfile:
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    return replace(prof, **{k: v for k, v in overrides.items() if v is not None})


def train_comparator(
    data_dir: str | Path,
    out: str | Path,
    *,
    base: str | None = None,
    profile: str | CmpProfile = "full",
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
    inference: Path | None = None,
) -> dict[str, Any]:
    """`perspect train --task claimdiff`: train on the fit topics, fit the decisions on the tune
    topics, measure dev (annotated and document-like), save the bundle entry; returns its
    manifest. `inference`: the folder of the inference pairs a profile with `inference` trains
    its inference head on (the profile trains ClaimDiff alone where it has none)."""
    import torch

    from perspect.lab.train import comparator as ct
    from perspect.reranker.comparator import Comparator

    prof = resolve_profile(profile)
    reporter = reporter or NullReporter()
    torch.set_num_threads(os.cpu_count() or 1)
    torch.manual_seed(prof.seed)
    t_start = time.perf_counter()
    fit = cd.load_pairs(data_dir, "fit")[: prof.max_pairs]
    tune = cd.load_pairs(data_dir, "tune")[: prof.max_pairs]
    dev = cd.load_pairs(data_dir, "dev")[: prof.max_pairs]
    nli = _inference_rows(inference, prof) if prof.inference else None
    model = Comparator.from_base(base, prof.rank, prof.alpha, nli=nli is not None)
    data = cd.data_fingerprints(data_dir) + (nli["fingerprints"] if nli else [])
    phases = []
    unrelated = cd.unrelated_pairs(fit, int(prof.unrelated_ratio * len(fit)), prof.seed)
    examples = ct.claimdiff_examples(fit + unrelated)
    log(
        f"claimdiff training pairs: {len(examples)} "
        f"({dict(Counter(cd.RELATIONS[e.label] for e in examples))})"
    )
    epochs = prof.epochs
    if nli is not None:  # ClaimDiff's rows as many times as keeps their epochs
        epochs = prof.inference_epochs
        examples = examples * max(1, round(prof.epochs / epochs))
        examples += ct.inference_examples(nli["train"])
        log(f"inference training pairs: {len(nli['train'])}")
    phase = ct.Phase(
        "claimdiff" if nli is None else "claimdiff + inference",
        epochs,
        prof.lr,
        prof.max_minutes,
        prof.rationale_weight,
        batch_size=prof.batch_size,
    )
    phases.append(ct.train_phase(model, examples, phase, prof.seed + 1, reporter, log))
    with reporter.stage("fitting thresholds on the tune topics, measuring dev", total=4) as adv:
        tune_s = score(model, tune)
        adv(1)
        tune_doc = score(model, cd.mixed(tune, prof.seed), rationale=False)
        adv(1)
        decisions = fit_decisions(tune_s, tune_doc)
        model.manifest.update(decisions)
        cut = decisions["rationale_threshold"]
        dev_s = score(model, dev)
        adv(1)
        dev_doc = score(model, cd.mixed(dev, prof.seed), rationale=False)
        adv(1)
    if nli is not None and nli["tune"] and nli["report"]:
        with reporter.stage("fitting the inference cuts, measuring held-out pairs"):
            got = fit_inference(model, nli["report"], nli["tune"])
        model.manifest["decisions"] = got["decisions"]
    th = decisions["thresholds"]
    metrics = {
        "dev": evaluate(dev_s, th["pairs"], cut, "dev").to_json(),
        "dev-doc": evaluate(dev_doc, th["doc"], cut, "dev-doc").to_json(),
        "tune": evaluate(tune_s, th["pairs"], cut, "tune").to_json(),
        "measured_with": "perspect train --task claimdiff (thresholds fitted on the tune topics)",
    }
    if "decisions" in model.manifest:
        metrics["nli_held"] = got["held"]
    model.manifest.update(
        {
            "profile": asdict(prof),
            "data": data,
            "split": {
                "fit": len(fit),
                "tune": len(tune),
                "dev": len(dev),
                "how": "train topics dealt by weaken count (perspect.core.datasets.claimdiff)",
            },
            "training": {"phases": phases},
            "dev_metrics": metrics,
            "total_seconds": round(time.perf_counter() - t_start, 1),
        }
    )
    model.save(out)
    return model.manifest


def evaluate_claimdiff(
    model_dir: str | Path, data_dir: str | Path, split: str
) -> list[ClaimDiffScores]:
    """`perspect eval claimdiff`: the split (thresholds for annotated pairs) and its document-like
    counterpart (upstream's test-full when present, else the split mixed with unrelated pairs)."""
    from perspect.reranker import factory

    if split not in ("dev", "test", "tune"):
        raise PerspectError(f"--split takes dev or test, not {split!r}")
    entry = {"comparator": model_dir}
    model = factory.load(["comparator"], factory.TORCH, entries=entry).comparator
    th = model.manifest["thresholds"]
    cut = float(model.manifest.get("rationale_threshold", 0.5))
    pairs = cd.load_pairs(data_dir, split)
    out = [evaluate(score(model, pairs), th["pairs"], cut, split)]
    full = Path(data_dir) / cd.S_FILE.format(split=f"{split}-full")
    if split == "test" and full.is_file():
        doc, name = cd.load_pairs(data_dir, "test-full"), "test-full"
    else:
        doc, name = cd.mixed(pairs), f"{split}-doc"
    out.append(evaluate(score(model, doc, rationale=False), th.get("doc", th["pairs"]), cut, name))
    return out
