"""Direction by itself: does a model tell B's that argue for A from B's that argue against it,
where topic cannot help (issue 61)?

Per level of the direction data's dev split (`../shared/data/direction/dev.jsonl`: debates no
training row came from), for each scorer in one run:
- for-vs-against AUROC over all sided pairs, and *within one A* (the AUROC of each A that has
  both directions, averaged weighted by its pairs: both sides share A's topic there), and the
  accuracy of the side read at 0.5;
- `point-counter` (always against): the share of counters read as against;
- the neither and rephrase rows apart: the share read as neither (the argument model's argmax),
  and the share of rephrases read as for;
- over all sided pairs, for the engine's stance decision, at its fitted side cut and unclear
  margin (as a search shows a cluster: the cut mapped to .5, the margin to a confidence): the
  share left unclear and the share of shown sides that are right.

Scorers, for `--models` (default models/) and `--baseline` (another bundle folder, e.g. the
previous main's: `git archive HEAD~1 models | tar -x -C /tmp/prev`, then /tmp/prev/models): its
argument model read two ways (its for-share P(for) / (P(for) + P(against)), and its stance head),
and the engine's stance decision as its pair model names it (P(B supports A), the stance stage a
search runs). The argument bench's sets (Touché, IBM, UKP, PERSPECTRUM) are bench/argument.py's.

    python bench/direction.py [--models models] [--baseline DIR] [--no-stance]
                              [--direction ../shared/data/direction] [--limit N] [--json OUT]

Skips with a reason where the data is absent. Figures: bench/RESULTS.md ("Direction").
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

LEVELS = ("argument-argument", "thesis-point", "point-counter", "claim-sentence",
          "sentence-sentence")  # fmt: skip


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
    by: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by.setdefault(r["a"], []).append(i)
    got, w = [], []
    for idx in by.values():
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
            conf = np.maximum(ss, 1 - ss)
            shown = conf >= side_at
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=ROOT / "models", help="a bundle folder")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another bundle folder, e.g. the previous main's: "
                    "git archive HEAD~1 models | tar -x -C /tmp/prev")  # fmt: skip
    ap.add_argument("--direction", type=Path, default=ROOT.parent / "shared" / "data" / "direction")
    ap.add_argument("--no-stance", action="store_true", help="skip the engine's stance decision")
    ap.add_argument("--limit", type=int, default=None, help="a sample of the dev rows (smoke)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
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
    print(render(out))
    if a.json:
        a.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


def bundle_scorers(name: str, root: Path, rows, cache: list, stance: bool) -> dict:
    """A bundle's scorers: its argument model read two ways (for-share, stance head) and the
    engine's stance decision as its pair model names it (P(B supports A))."""
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
        by: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            by.setdefault(r["a"], []).append(i)
        for claim, idx in by.items():
            p[idx] = st(claim, [rows[i]["b"] for i in idx])
        trunk = Path(ms.trunk.origin).name if ms.trunk is not None else "pair head"
        # shown on a side as a search shows a cluster: past the fitted unclear margin around the
        # side cut (Decisions.side), mapped to a confidence cut on the side share
        from perspect.core.model.decisions import Decisions

        d = Decisions.from_manifest(ms.pair.manifest)
        cut, margin = d.stance_side, d.stance_unclear or 0.0
        scale = 2 * max(cut, 1 - cut)  # cut -> .5, |p - cut| >= margin <=> shown
        p, side_at = 0.5 + (p - cut) / scale, 0.5 + margin / scale
        out[f"{name}: engine stance decision ({trunk})"] = (p, None, side_at)
    return out


def render(out: dict) -> str:
    cols = ("n_sided", "auroc", "auroc_within_a", "accuracy", "read_against", "unclear",
            "shown_right", "neither_read_neither", "rephrase_read_for")  # fmt: skip
    lines = [f"direction dev, {out['n']} rows, {out['seconds']} s", ""]
    lines.append("| level | scorer | " + " | ".join(cols) + " |")
    lines.append("|---" * (len(cols) + 2) + "|")
    for level, by in [*out["levels"].items(), ("all", out["all"])]:
        for name, r in by.items():
            vals = " | ".join("-" if r.get(c) is None else str(r[c]) for c in cols)
            lines.append(f"| {level} | {name} | {vals} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
