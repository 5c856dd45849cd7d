"""The argument model on what no training row came from: cross-topic sets and direction alone.

    python -m bench argument cross-topic [--model models/argument] [--data DIR]
                                         [--argument ../shared/data/argument] [--no-shipped]
                                         [--json OUT]
    python -m bench argument direction [--models models] [--baseline DIR] [--no-stance]
                                       [--direction ../shared/data/direction] [--limit N]
                                       [--json OUT]

`cross-topic`: the argument model beside the shipped stance decision, in one run, for every set no
training row came from, as readers bring topics nothing was trained on:
- stance AUROC on PERSPECTRUM dev, Touché 2023 test and IBM Claim Stance test (motions unseen):
  the shipped stance decision (the relation trunk stacked with the pair head, as a search sides a
  perspective), the argument model's for-share P(for) / (P(for) + P(against)) and its stance head;
- for / against / neither: 3-way macro-F1 on Touché test (with decoys), IBM test (with decoys) and
  UKP's two held-out topics (cross-topic, leave-topics-out), beside the majority class;
- argument-vs-not precision and recall at the shipped mining cut on each held-out UKP topic (the
  cut was fitted on the first: the second is the honest figure), and mining as a reader meets it
  (shown, arguments, sided, right);
- evidence: PERSPECTRUM dev claims' paragraphs (linked = for, an opposing perspective's =
  against, another claim's = neither) over the "supports" cut: share for / against / neither.

`direction`: does a model tell B's that argue for A from B's that argue against it, where topic
cannot help (issue 61)? Per level of the direction data's dev split (`dev.jsonl`: debates no
training row came from), for each scorer in one run: for-vs-against AUROC over all sided pairs
and *within one A* (the AUROC of each A with both directions, averaged weighted by its pairs: both
sides share A's topic there), and the accuracy of the side read at 0.5; `point-counter` (always
against): the share of counters read as against; the neither and rephrase rows apart (the share
read as neither, the argument model's argmax, and the share of rephrases read as for); over all
sided pairs, for the engine's stance decision at its fitted side cut and unclear margin (as a
search shows a cluster: the cut mapped to .5, the margin to a confidence), the share left unclear
and the share of shown sides that are right. Scorers, for `--models` and `--baseline` (another
bundle folder, e.g. the previous main's: `git archive HEAD~1 models | tar -x -C /tmp/prev`, then
/tmp/prev/models): its argument model read two ways (for-share and stance head), and the engine's
stance decision as its pair model names it (P(B supports A), the stance stage a search runs).

Both skip with a reason where the data is absent. Figures: bench/RESULTS.md ("The argument model",
"Direction").
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness

ARGUMENT = harness.SHARED / "argument"
DIRECTION = harness.SHARED / "direction"
LEVELS = ("argument-argument", "thesis-point", "point-counter", "claim-sentence",
          "sentence-sentence")  # fmt: skip


def by_first(texts) -> dict[str, list[int]]:
    """Row indices grouped by their A (a claim's pairs scored in one call)."""
    by: dict[str, list[int]] = {}
    for i, a in enumerate(texts):
        by.setdefault(a, []).append(i)
    return by


# ---- cross-topic -------------------------------------------------------------------------------


def cross_topic(a) -> int:
    """Stance AUROC, 3-way F1, mining and evidence of the argument model on unseen topics.

    Beside the shipped stance decision (`--no-shipped` leaves it out), on every set no training
    row came from: PERSPECTRUM dev, Touché and IBM test, UKP's held-out topics."""
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
        head = model.trunk.pairs(
            "stance", cache.get([r.a for r in rows]), cache.get([r.b for r in rows])
        )
        row = {
            "n_sided": len(sided),
            "argument_share_auroc": ae.stance_auroc(rows, p[k]),
            "argument_stance_head_auroc": ae.stance_auroc(rows, np.asarray(head)),
        }
        if shipped is not None:
            ps = np.zeros(len(sided))
            for claim, idx in by_first(r.a for r in sided).items():
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
        share = lambda label: round(float((yb[over] == label).mean()), 3) if over.any() else None  # noqa: E731
        out["sets"]["dev_bags"] = {
            "n": len(yb),
            "supports_shown": int(over.sum()),
            "of_for_bags_shown": round(float(over[yb == 0].mean()), 3),
            "for": share(0),
            "against": share(1),
            "neither": share(2),
            "top_is_for_among_for_and_against": top_pick(s["dev_bags"], pb),
        }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["cuts"] = {k: v for k, v in cuts.items() if k != "fitted_on"}
    print(render_cross_topic(out))
    # numpy scalars as plain numbers (the JSON the old bench wrote)
    harness.write_json(a.json, json.loads(json.dumps(out, default=float)))
    return 0


def majority_f1(y: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    top = np.bincount(y).argmax()
    return round(float(f1_score(y, np.full(len(y), top), average="macro")), 3)


def top_pick(bags, pb: np.ndarray) -> float | None:
    """Per perspective with both a linked and an opposing paragraph: how often the paragraph
    ordered first by P(for) is the linked one (what evidence shows first)."""
    by = by_first(b.a if b.label in (0, 1) else None for b in bags)
    by.pop(None, None)
    got = []
    for idx in by.values():
        if {bags[i].label for i in idx} == {0, 1}:
            best = max(idx, key=lambda i: pb[i, 0])
            got.append(bags[best].label == 0)
    return round(float(np.mean(got)), 3) if got else None


def render_cross_topic(out: dict) -> str:
    lines = [f"argument model {out['model']} (created {out['created']}), {out['seconds']} s", ""]
    rows = []
    for k, r in out["sets"].items():
        if "n_sided" in r:
            tw = r.get("three_way")
            f = f"{tw['macro_f1']:.3f} ({r['majority_macro_f1']:.3f})" if tw else "-"
            rows.append([k, r["n_sided"], r.get("shipped_auroc", "-"), r["argument_share_auroc"],
                         r["argument_stance_head_auroc"], f])  # fmt: skip
    heads = ["set", "sided n", "shipped stance AUROC", "argument for-share AUROC",
             "argument stance head AUROC", "3-way macro-F1 (majority)"]  # fmt: skip
    lines += [harness.table(heads, rows), ""]
    rows = []
    for k, r in out["sets"].items():
        if k.startswith("ukp:"):
            tw, mi = r["three_way"], r.get("mining") or {}
            fit = " (test rows; cut fitted on its train + val)" if r.get("cut_fitted_here") else ""
            rows.append([
                f"{k[4:]}{fit}", tw["n"], f"{tw['macro_f1']:.3f} ({r['majority_macro_f1']:.3f})",
                r["stance_auroc"], f"{mi.get('argument_precision')} / {mi.get('argument_recall')}",
                f"{mi.get('shown')}, {mi.get('arguments')}, {mi.get('sided_share_of_arguments')}, "
                f"{mi.get('sided_right')}",
            ])  # fmt: skip
    heads = ["held-out UKP topic", "n", "3-way macro-F1 (majority)", "stance AUROC",
             "argument precision / recall at the cut", "mined shown, arguments, sided, right"]  # fmt: skip
    lines.append(harness.table(heads, rows))
    if "dev_bags" in out["sets"]:
        r = out["sets"]["dev_bags"]
        lines += [
            "",
            f"evidence (PERSPECTRUM dev paragraphs, {r['n']}): 'supports' shown for "
            f"{r['supports_shown']}; of those for {r['for']}, against {r['against']}, neither "
            f"{r['neither']}; linked paragraphs kept {r['of_for_bags_shown']}; linked first over "
            f"an opposing one {r['top_is_for_among_for_and_against']}",
        ]
    lines += ["", f"cuts: {json.dumps(out['cuts'])}"]
    return "\n".join(lines)


def cross_topic_args(p) -> None:
    p.add_argument(
        "--model", type=Path, default=harness.ROOT / "models" / "argument", help="its folder"
    )
    p.add_argument("--argument", type=Path, default=ARGUMENT, help="UKP, Touché, IBM (shared)")
    p.add_argument("--no-shipped", action="store_true", help="skip the shipped stance decision")


# ---- direction ---------------------------------------------------------------------------------


def read_dev(folder: Path, limit: int | None) -> list[dict]:
    rows = [json.loads(x) for x in (folder / "dev.jsonl").open(encoding="utf-8") if x.strip()]
    if limit:
        rows = random.Random(3).sample(rows, min(limit, len(rows)))
    return rows


def auroc(y: np.ndarray, s: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    if len(set(y.tolist())) < 2:
        return None
    return round(100 * float(roc_auc_score(y, s)), 1)


def within_a(rows: list[dict], y: np.ndarray, s: np.ndarray) -> float | None:
    """AUROC within each A that has pairs of both directions, weighted by its pairs."""
    got, w = [], []
    for idx in by_first(r["a"] for r in rows).values():
        a = auroc(y[idx], s[idx])
        if a is not None:
            got.append(a)
            w.append(len(idx))
    return round(float(np.average(got, weights=w)), 1) if got else None


def level_report(rows: list[dict], share: np.ndarray, p3: np.ndarray | None, side_at) -> dict:
    """One scorer on one level's rows: `share` P(for)-like in [0, 1], `p3` the 3-way (or None)."""
    lab = np.array([r["label"] for r in rows])
    sided = (lab == "for") | (lab == "against")
    out: dict = {"n": len(rows), "n_sided": int(sided.sum())}
    if sided.any():
        ys, ss = lab[sided] == "for", share[sided]
        out["auroc"] = auroc(ys, ss)
        out["auroc_within_a"] = within_a([r for r, k in zip(rows, sided, strict=True) if k], ys, ss)
        out["accuracy"] = round(100 * float(((ss >= 0.5) == ys).mean()), 1)
        out["read_against"] = round(100 * float((ss[~ys] < 0.5).mean()), 1) if (~ys).any() else None
        if side_at is not None:
            shown = np.maximum(ss, 1 - ss) >= side_at
            out["unclear"] = round(100 * float(1 - shown.mean()), 1)
            out["shown_right"] = (
                round(100 * float(((ss >= 0.5) == ys)[shown].mean()), 1) if shown.any() else None
            )
    for kind in ("neither", "rephrase"):
        m = lab == kind
        if m.any():
            if p3 is not None:
                out[f"{kind}_read_neither"] = round(100 * float((p3[m].argmax(1) == 2).mean()), 1)
            out[f"{kind}_read_for"] = round(100 * float((share[m] >= 0.5).mean()), 1)
    return out


def direction(a) -> int:
    """For-vs-against AUROC (overall and within one A) per level of the direction dev split.

    Also the accuracy of the side at .5, and the shares left unclear and shown right, for this
    bundle's scorers and, with `--baseline`, another bundle's beside them."""
    if not (a.direction / "dev.jsonl").is_file():
        print(f"skipped: {a.direction / 'dev.jsonl'} is absent (../shared/data/direction)")
        return 0
    t0 = time.perf_counter()
    rows = read_dev(a.direction, a.limit)
    cache: list = []  # one frozen base: the lower states serve every scorer
    scorers: dict[str, tuple[np.ndarray, np.ndarray | None, float | None]] = {}
    for name, root in (("this", a.models), ("baseline", a.baseline)):
        if root is not None:
            scorers.update(bundle_scorers(name, root, rows, cache, not a.no_stance))

    out: dict = {"n": len(rows), "levels": {}, "all": {}}
    for name, (share, p3, side_at) in scorers.items():
        for level in LEVELS:
            idx = [i for i, r in enumerate(rows) if r["level"] == level]
            sub = p3[idx] if p3 is not None else None
            out["levels"].setdefault(level, {})[name] = level_report(
                [rows[i] for i in idx], share[idx], sub, side_at
            )
        out["all"][name] = level_report(rows, share, p3, side_at)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(render_direction(out))
    harness.write_json(a.json, out)
    return 0


def bundle_scorers(name: str, root: Path, rows, cache: list, stance: bool) -> dict:
    """A bundle's scorers: its argument model read two ways (for-share, stance head) and the
    engine's stance decision as its pair model names it (P(B supports A))."""
    from perspect.core.model.decisions import Decisions
    from perspect.lab import argument_eval as ae
    from perspect.pipeline.stance import StanceScorer
    from perspect.reranker import factory
    from perspect.reranker.argument import ArgumentModel, side_share

    out: dict = {}
    m = ArgumentModel.load(root / "argument", serving=True)
    if not cache:
        cache.append(ae.StateCache(m.lower))
    states = cache[0]
    sa, sb = states.get([r["a"] for r in rows]), states.get([r["b"] for r in rows])
    p3 = m.judge(sa, sb)
    head = np.asarray(m.trunk.pairs("stance", sa, sb), dtype=np.float64).ravel()
    side_at = ((m.manifest.get("decisions") or {}).get("argument") or {}).get("side_at")
    label = f"{name}: argument {m.manifest.get('created', '?')[:16]}"
    out[f"{label} for-share"] = (side_share(p3), p3, side_at)
    out[f"{label} stance head"] = (head, None, None)
    if stance:
        ms = factory.load(["pair", "trunk"], factory.Serving(), pair=root / "pair")
        st = StanceScorer(ms.pair, ms.trunk)
        if ms.trunk is not None and ms.trunk.states_key == m.states_key:
            st.states = lambda texts, ids=None: states.get(list(texts))
        p = np.zeros(len(rows))
        for claim, idx in by_first(r["a"] for r in rows).items():
            p[idx] = st(claim, [rows[i]["b"] for i in idx])
        trunk = Path(ms.trunk.origin).name if ms.trunk is not None else "pair head"
        # shown on a side as a search shows a cluster: past the fitted unclear margin around the
        # side cut (Decisions.side), mapped to a confidence cut on the side share
        d = Decisions.from_manifest(ms.pair.manifest)
        cut, margin = d.stance_side, d.stance_unclear or 0.0
        scale = 2 * max(cut, 1 - cut)  # cut -> .5, |p - cut| >= margin <=> shown
        p, side_at = 0.5 + (p - cut) / scale, 0.5 + margin / scale
        out[f"{name}: engine stance decision ({trunk})"] = (p, None, side_at)
    return out


def render_direction(out: dict) -> str:
    cols = ("n_sided", "auroc", "auroc_within_a", "accuracy", "read_against", "unclear",
            "shown_right", "neither_read_neither", "rephrase_read_for")  # fmt: skip
    rows = [
        [level, name, *("-" if r.get(c) is None else str(r[c]) for c in cols)]
        for level, by in [*out["levels"].items(), ("all", out["all"])]
        for name, r in by.items()
    ]
    head = f"direction dev, {out['n']} rows, {out['seconds']} s\n\n"
    return head + harness.table(["level", "scorer", *cols], rows)


def direction_args(p) -> None:
    p.add_argument("--models", type=Path, default=harness.ROOT / "models", help="a bundle folder")
    p.add_argument("--baseline", type=Path, default=None,
                   help="another bundle folder, e.g. the previous main's: "
                   "git archive HEAD~1 models | tar -x -C /tmp/prev")  # fmt: skip
    p.add_argument("--direction", type=Path, default=DIRECTION, help="its dev.jsonl's folder")
    p.add_argument("--no-stance", action="store_true", help="skip the engine's stance decision")
    p.add_argument("--limit", type=int, default=None, help="a sample of the dev rows (smoke)")


def main(argv=None) -> int:
    return harness.commands(
        __doc__,
        {
            "cross-topic": (cross_topic, ("data", "json"), cross_topic_args),
            "direction": (direction, ("json",), direction_args),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
