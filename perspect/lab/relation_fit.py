"""The relation model's decisions, fitted for precision on held-out data, written into its
manifest (`decisions`): the cuts where a reader acts on what it says.

- `compare`: P(entail) and P(contradict) on the joint form (as `perspect compare` reads aligned
  sentences), on held-out inference pairs that are not the ones reported (`held_split`);
- `news`: P(strengthen) and P(weaken) of the ClaimDiff head, sentence -> claim, on ClaimDiff's tune
  topics in the document-like mix (most sentences bear on nothing, as in a news pool).

Why precision: these cuts turn a probability into a verdict a reader trusts ("supports", a cited
reason, "strengthens"); below them Perspect says "related" or shows nothing, which costs recall
and never misleads. Run: python -m perspect.lab.relation_fit MODEL_DIR (a trained folder).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.datasets import claimdiff as cd
from perspect.lab.train.relation_data import inference_rows

PRECISION = 0.8  # inference cuts (evidence, compare)
NEWS_PRECISION = 0.7  # issue 41: strengthen / weaken precision on held-out topics
MIN_KEPT = 20  # a cut must keep at least this many tune rows
# below this precision at every cut the verdict is never given (cut above 1): a relation that is
# wrong more often than right is not shown at all
FLOOR = 0.5


def held_split(inference: Path, seed: int, report: int) -> tuple[list, list]:
    """(reported, tune) held-out inference rows, split exactly as the trainer did: its first
    `report` shuffled held-out rows are reported, the rest fit cuts."""
    rng = random.Random(seed)
    train, held = inference_rows(inference)
    rng.shuffle(train)
    rng.shuffle(held)
    return held[:report], held[report:]


def precision_cut(y: np.ndarray, p: np.ndarray, target: float) -> dict[str, float]:
    """The lowest cut whose precision on (y, p) reaches `target` (keeping MIN_KEPT rows); the
    most precise cut when none does, and none at all (above 1) when that one is under FLOOR."""
    order = np.argsort(-p)
    hits = np.cumsum(y[order])
    kept = np.arange(1, len(p) + 1)
    prec = hits / kept
    ok = np.where((prec >= target) & (kept >= MIN_KEPT))[0]
    i = int(ok.max()) if len(ok) else int(np.argmax(np.where(kept >= MIN_KEPT, prec, -1)))
    never = prec[i] < FLOOR
    return {
        "cut": 1.01 if never else round(float(p[order][i]), 4),
        "never": bool(never),
        "precision": round(float(prec[i]), 4),
        "recall": round(float(hits[i] / max(1, y.sum())), 4),
    }


def fit(trunk, inference: Path, claimdiff: Path, seed: int, report: int) -> dict[str, Any]:
    _, tune = held_split(inference, seed, report)
    y = np.array([r[3] for r in tune])
    a, b = [r[1] for r in tune], [r[2] for r in tune]
    joint = trunk.joint("nli", a, b)
    out: dict[str, Any] = {}
    # no "evidence" cuts: read against PERSPECTRUM's gold links (tune claims), the cited
    # sentence's P(entail) is right at most 49 % of the time (base rate 18 %) and P(contradict)
    # does not pick out non-backing paragraphs, below the fitted verdict stack the engine keeps
    # (bench/STUDIES.md, "The relation model as an evidence verdict")
    for name, p in (("compare", joint),):
        e = precision_cut(y == 0, p[:, 0], PRECISION)
        c = precision_cut(y == 2, p[:, 2], PRECISION)
        out[name] = {
            "entail_at": e["cut"],
            "contradict_at": c["cut"],
            "fitted_on": f"{len(tune)} held-out inference pairs (not reported)",
            "entail": e,
            "contradict": c,
        }
    pairs = cd.mixed(cd.load_pairs(claimdiff, "tune"))
    rel = np.array([cd.RELATIONS.index(p.relation) for p in pairs])
    probs = trunk.pairs(
        "claimdiff",
        trunk.lower([p.claim_a for p in pairs]),
        trunk.lower([p.claim_b for p in pairs]),
    )
    s = precision_cut(rel == 1, probs[:, 1], NEWS_PRECISION)
    w = precision_cut(rel == 2, probs[:, 2], NEWS_PRECISION)
    out["news"] = {
        "strengthen_at": s["cut"],
        "weaken_at": w["cut"],
        "fitted_on": f"ClaimDiff tune topics, document-like mix ({len(pairs)} pairs)",
        "strengthen": s,
        "weaken": w,
    }
    return out


def fit_folder(
    folder: Path,
    inference: Path,
    claimdiff: Path,
    seed: int | None = None,
    report: int | None = None,
) -> dict[str, Any]:
    """Fit the decisions of the trained (unpacked) model in `folder` into its manifest, beside
    the ones it has (the argument model's own cuts stay). `seed` and `report`: the held-out split
    of the run whose rows are reported (default: the folder's own training run's)."""
    from perspect.reranker import factory

    man_path = folder / "manifest.json"
    man = json.loads(man_path.read_text())
    trunk = factory.load(["trunk"], factory.TORCH, entries={"trunk": folder}).trunk
    seed = int(man["training"].get("seed", 29)) if seed is None else seed
    report = int(man.get("args", {}).get("nli_held", 3000)) if report is None else report
    man["decisions"] = {
        **man.get("decisions", {}),
        **fit(trunk, inference, claimdiff, seed, report),
    }
    man_path.write_text(json.dumps(man, indent=2) + "\n")
    return man["decisions"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--inference", type=Path, default=Path("../shared/data/inference"))
    ap.add_argument("--claimdiff", type=Path, default=Path("data/claimdiff"))
    args = ap.parse_args()
    print(json.dumps(fit_folder(args.folder, args.inference, args.claimdiff), indent=1))


if __name__ == "__main__":
    main()
