"""Cross-topic bench of the argument model beside the shipped stance decision, in one run.

For every set no training row came from, as readers bring topics nothing was trained on:
- stance AUROC on PERSPECTRUM dev, Touché 2023 test and IBM Claim Stance test (motions unseen):
  the shipped stance decision (the relation trunk stacked with the pair head, as a search sides a
  perspective), the argument model's for-share P(for) / (P(for) + P(against)) and its stance
  head;
- for / against / neither: 3-way macro-F1 on Touché test (with decoys), IBM test (with decoys)
  and UKP's two held-out topics (cross-topic, leave-topics-out), beside the majority class;
- argument-vs-not precision and recall at the shipped mining cut on each held-out UKP topic (the
  cut was fitted on the first: the second is the honest figure), and mining as a reader meets it
  (shown, arguments, sided, right);
- evidence: PERSPECTRUM dev claims' paragraphs (linked = for, an opposing perspective's =
  against, another claim's = neither) over the "supports" cut: share for / against / neither.

    python bench/argument.py [--model models/argument] [--data data/perspectrum]
                             [--argument ../shared/data/argument] [--json OUT]

Skips with a reason where the data is absent. Figures: bench/RESULTS.md ("The argument model").
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=ROOT / "models" / "argument")
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "perspectrum")
    ap.add_argument("--argument", type=Path, default=ROOT.parent / "shared" / "data" / "argument")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-shipped", action="store_true", help="skip the shipped stance decision")
    a = ap.parse_args()
    for need in (a.data / "perspective_pool_v1.0.json", a.argument / "ukp_sentential.jsonl"):
        if not need.is_file():
            print(f"skipped: {need} is absent (make data; ../shared/data/argument)")
            return 0

    from perspect.core.datasets.perspectrum import load_claims
    from perspect.lab import argument_eval as ae
    from perspect.lab.train import argument_data as ad
    from perspect.reranker import factory
    from perspect.reranker.argument import NEITHER, ArgumentModel

    t0 = time.perf_counter()
    model = ArgumentModel.load(a.model, serving=True)
    cuts = (model.manifest.get("decisions") or {}).get("argument") or {}
    cache = ae.StateCache(model.lower)
    s = ae.sets(a.data, a.argument)
    dev = load_claims(a.data, "dev")
    s["dev_bags"] = ad.evidence_bags(a.data, random.Random(11), dev)
    stance_sets = ("perspectrum_dev", "touche_test", "ibm_test")
    ukp = [f"ukp:{t}" for t in ad.UKP_HELD_OUT]
    p = {k: ae.score_rows(model, cache, s[k]) for k in (*stance_sets, *ukp)}
    out: dict = {"model": str(a.model), "created": model.manifest.get("created"), "sets": {}}

    shipped = None
    if not a.no_shipped:
        from perspect.pipeline.stance import StanceScorer

        m = factory.load(["pair", "trunk"], factory.Serving())
        shipped = StanceScorer(m.pair, m.trunk)

    for k in stance_sets:
        rows = s[k]
        y = np.array([r.label for r in rows])
        sided = [r for r in rows if r.label != NEITHER]
        row = {
            "n_sided": len(sided),
            "argument_share_auroc": ae.stance_auroc(rows, p[k]),
            "argument_stance_head_auroc": None,
        }
        head = model.trunk.pairs(
            "stance", cache.get([r.a for r in rows]), cache.get([r.b for r in rows])
        )
        row["argument_stance_head_auroc"] = ae.stance_auroc(rows, np.asarray(head))
        if shipped is not None:
            ps = np.zeros(len(sided))
            by: dict[str, list[int]] = {}
            for i, r in enumerate(sided):
                by.setdefault(r.a, []).append(i)
            for claim, idx in by.items():
                ps[idx] = shipped(claim, [sided[i].b for i in idx])
            row["shipped_auroc"] = ae.stance_auroc(sided, ps)
        if (y == NEITHER).any():
            row["three_way"] = ae.three_way(rows, p[k])
            row["majority_macro_f1"] = majority_f1(y)
        out["sets"][k] = row

    for k in ukp:
        rows = s[k]
        y = np.array([r.label for r in rows])
        row = {"three_way": ae.three_way(rows, p[k]), "majority_macro_f1": majority_f1(y),
               "stance_auroc": ae.stance_auroc(rows, p[k])}  # fmt: skip
        if cuts:
            row["mining"] = ae.mining_report(rows, p[k], cuts)
            row["cut_fitted_here"] = k.endswith(ae.MINE_FIT_TOPIC)
        out["sets"][k] = row

    pb = ae.score_bags(model, cache, s["dev_bags"])
    yb = np.array([b.label for b in s["dev_bags"]])
    if cuts:
        over = pb[:, 0] >= cuts["for_at"]
        out["sets"]["dev_bags"] = {
            "n": len(yb),
            "supports_shown": int(over.sum()),
            "of_for_bags_shown": round(float(over[yb == 0].mean()), 3),
            "for": round(float((yb[over] == 0).mean()), 3) if over.any() else None,
            "against": round(float((yb[over] == 1).mean()), 3) if over.any() else None,
            "neither": round(float((yb[over] == 2).mean()), 3) if over.any() else None,
            "top_is_for_among_for_and_against": top_pick(s["dev_bags"], pb),
        }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["cuts"] = {k: v for k, v in cuts.items() if k != "fitted_on"}
    print(render(out))
    if a.json:
        a.json.write_text(json.dumps(out, indent=2, default=float) + "\n")
    return 0


def majority_f1(y: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    top = np.bincount(y).argmax()
    return round(float(f1_score(y, np.full(len(y), top), average="macro")), 3)


def top_pick(bags, pb: np.ndarray) -> float | None:
    """Per perspective with both a linked and an opposing paragraph: how often the paragraph
    ordered first by P(for) is the linked one (what evidence shows first)."""
    by: dict[str, list[int]] = {}
    for i, b in enumerate(bags):
        if b.label in (0, 1):
            by.setdefault(b.a, []).append(i)
    got = []
    for idx in by.values():
        if {bags[i].label for i in idx} == {0, 1}:
            best = max(idx, key=lambda i: pb[i, 0])
            got.append(bags[best].label == 0)
    return round(float(np.mean(got)), 3) if got else None


def render(out: dict) -> str:
    lines = [f"argument model {out['model']} (created {out['created']}), {out['seconds']} s", ""]
    lines.append(
        "| set | sided n | shipped stance AUROC | argument for-share AUROC | argument stance head AUROC | 3-way macro-F1 (majority) |"
    )
    lines.append("|---|---|---|---|---|---|")
    for k, r in out["sets"].items():
        if "n_sided" in r:
            tw = r.get("three_way")
            f = f"{tw['macro_f1']:.3f} ({r['majority_macro_f1']:.3f})" if tw else "-"
            lines.append(
                f"| {k} | {r['n_sided']} | {r.get('shipped_auroc', '-')} | {r['argument_share_auroc']} | {r['argument_stance_head_auroc']} | {f} |"
            )
    lines += [
        "",
        "| held-out UKP topic | n | 3-way macro-F1 (majority) | stance AUROC | argument precision / recall at the cut | mined shown, arguments, sided, right |",
        "|---|---|---|---|---|---|",
    ]
    for k, r in out["sets"].items():
        if k.startswith("ukp:"):
            tw, mi = r["three_way"], r.get("mining") or {}
            fit = " (test rows; cut fitted on its train + val)" if r.get("cut_fitted_here") else ""
            lines.append(
                f"| {k[4:]}{fit} | {tw['n']} | {tw['macro_f1']:.3f} ({r['majority_macro_f1']:.3f}) | {r['stance_auroc']} | "
                f"{mi.get('argument_precision')} / {mi.get('argument_recall')} | {mi.get('shown')}, {mi.get('arguments')}, {mi.get('sided_share_of_arguments')}, {mi.get('sided_right')} |"
            )
    if "dev_bags" in out["sets"]:
        r = out["sets"]["dev_bags"]
        lines += [
            "",
            f"evidence (PERSPECTRUM dev paragraphs, {r['n']}): 'supports' shown for {r['supports_shown']}; of those for {r['for']}, against {r['against']}, neither {r['neither']}; linked paragraphs kept {r['of_for_bags_shown']}; linked first over an opposing one {r['top_is_for_among_for_and_against']}",
        ]
    lines += ["", f"cuts: {json.dumps(out['cuts'])}"]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
