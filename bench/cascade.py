"""The cascade's gate before the equivalence cross-encoder (issue 62, item 2): fitted on the tune
claims, then what it changes on dev.

    python bench/cascade.py [--index default] [--tune 60] [--dev 139] [--lose 0.005] [--write]

1. Fit (`--tune` held-out train claims, the gate off): every pair the lazy complete-link asks the
   cross-encoder for, with the stack's probability at the cross-encoder's best score (`hi`, from
   the cheap features alone) and the exact one once scored. The floor is the highest `hi` under
   which at most `--lose` of the pairs that clear the cluster cut once scored fall.
2. Dev: each claim searched by the engine without the gate and with it (`EngineConfig.
   equivalence_ask_floor`), one process, taking turns: the pairs asked, the equivalence stage's
   time, whether the clusters (their member sets), their sides and the evidence shown under each
   cluster stay the same.

T1-T5 with and without it: `perspect eval perspectrum --split dev --index default [--no-cascade]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect import Perspect  # noqa: E402
from perspect.core.datasets.perspectrum import load_claims, tune_claims_of  # noqa: E402
from perspect.pipeline import clusters as clusters_mod  # noqa: E402
from perspect.pipeline.engine import EngineConfig  # noqa: E402

FLOORS = (0.15, 0.18, 0.2, 0.22, 0.24, 0.26, 0.28, 0.3)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


class Recorder:
    """Every pair a search asks the equivalence model for: (its bound `hi`, its exact stacked
    probability), per search."""

    def __init__(self):
        self.rows: list[tuple[float, float]] = []
        self.asked = 0
        orig = clusters_mod.Clusters.scorer
        rec = self

        def scorer(self, query, ids, texts):
            f = orig(self, query, ids, texts)
            st, name = self.decisions.stack("equivalence"), self.model_feature()

            def score(i, j, sub):
                s = f(i, j, sub)
                hi = st.prob({**sub, name: np.ones(len(i))})
                rec.rows += zip(hi.tolist(), st.prob({**sub, name: s}).tolist(), strict=True)
                rec.asked += len(i)
                return s

            return score

        clusters_mod.Clusters.scorer = scorer


def fit(p: Perspect, claims, rec: Recorder, lose: float) -> float:
    for c in claims:
        p.search(c.text)
    cut = p.engine().clusters.cluster_cut()
    hi, prob = (np.array(x) for x in zip(*rec.rows, strict=True))
    clear = prob >= cut
    print(f"fit: {len(claims)} tune claims, {len(hi):,} pairs asked at the cluster cut {cut:.2f}, ")
    print(f"     {int(clear.sum())} of them clear it once scored")
    print(f"{'floor':>7}{'pairs left out':>16}{'clearing pairs lost':>21}")
    best = cut
    for f in FLOORS:
        lost = int((clear & (hi < f)).sum())
        print(f"{f:>7.2f}{(hi < f).mean():>15.1%}{lost:>15} ({lost / max(1, clear.sum()):.1%})")
        if lost <= lose * clear.sum():
            best = f
    print(f"floor: {best:.2f} (the highest losing at most {lose:.1%})")
    return best


def write(model_dir: Path, floor: float, n: int, lose: float) -> None:
    from perspect.core.model import bundle

    man = json.loads((Path(model_dir) / "manifest.json").read_text())
    man["cascade"] = {
        "equivalence_ask_floor": floor,
        "fitted_on": f"{n} PERSPECTRUM tune claims (held-out train claims), bench/cascade.py",
        "rule": f"the highest floor losing at most {lose:.1%} of the pairs that clear the cut",
    }
    note = f"the cascade's gate before the equivalence cross-encoder: {floor}"
    bundle.replace_file(
        model_dir, "manifest.json", (json.dumps(man, indent=2) + "\n").encode(), note
    )
    print(f"written: {model_dir}/manifest.json, cascade.equivalence_ask_floor = {floor}")


def shown(res):
    """What a reader sees of the clusters: member sets, sides, the evidence (ids, verdicts)
    and the cited reason, in order."""
    return [
        (
            frozenset(m.id for m in c.members),
            c.stance,
            tuple((e.id, e.verdict) for e in c.evidence),
            c.why.sentence if c.why else None,
        )
        for c in res.clusters
    ]


def dev_wanted(a) -> bool:
    return a.dev > 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=None)
    ap.add_argument("--tune", type=int, default=60)
    ap.add_argument("--dev", type=int, default=139)
    ap.add_argument("--lose", type=float, default=0.005)
    ap.add_argument("--write", action="store_true", help="keep the floor in the pair model")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "perspectrum")
    a = ap.parse_args()
    if not (a.data / "perspectrum_with_answers_v1.0.json").is_file():
        print(f"skipped: no PERSPECTRUM at {a.data}")
        return 0
    rec = Recorder()
    off = EngineConfig(equivalence_ask_floor=0.0)  # no gate
    p_off = Perspect.open(a.index, home=a.home, config=off)
    p_off.search("Zoos should be closed, says the warm-up.")
    tune = tune_claims_of(a.data)[0][: a.tune]
    floor = fit(p_off, tune, rec, a.lose)
    if a.write:
        write(p_off.engine().model.origin, floor, len(tune), a.lose)
    if not dev_wanted(a):
        return 0
    p_on = Perspect.open(a.index, home=a.home, config=replace(off, equivalence_ask_floor=floor))
    p_on.search("Zoos should be closed, says the warm-up.")
    dev = sorted(load_claims(a.data, "dev"), key=lambda c: c.cid)[: a.dev]
    asked = {"off": [], "on": []}
    eq_ms = {"off": [], "on": []}
    total = {"off": [], "on": []}
    same = {"clusters": 0, "sides": 0, "evidence": 0, "all": 0}
    n_clusters = {"off": 0, "on": 0}
    for n, c in enumerate(dev):
        got = {}
        for name in ("off", "on") if n % 2 == 0 else ("on", "off"):
            p = p_off if name == "off" else p_on
            before = rec.asked
            t0 = time.perf_counter()
            res = p.search(c.text)
            total[name].append(1000 * (time.perf_counter() - t0))
            asked[name].append(rec.asked - before)
            eq_ms[name].append(res.timings_ms.get("equivalence", 0.0))
            n_clusters[name] += len(res.clusters)
            got[name] = shown(res)
        a_, b_ = got["off"], got["on"]
        same["clusters"] += {x[0] for x in a_} == {x[0] for x in b_}
        sides = lambda s: {(x[0], x[1]) for x in s}  # noqa: E731
        ev = lambda s: {(x[0], x[2], x[3]) for x in s}  # noqa: E731
        same["sides"] += sides(a_) == sides(b_)
        same["evidence"] += ev(a_) == ev(b_)
        same["all"] += a_ == b_
        if a_ != b_:
            print(f"differs: {c.text} ({len(a_)} clusters without the gate, {len(b_)} with it)")
    k = len(dev)
    print(f"\ndev: {k} claims, each searched without the gate and with it (floor {floor:.2f})")
    print(f"{'':<22}{'no gate':>10}{'gate':>10}")
    for label, d in (("pairs asked p50", asked), ("equivalence ms p50", eq_ms)):
        print(f"{label:<22}{statistics.median(d['off']):>10.0f}{statistics.median(d['on']):>10.0f}")
        p95 = label.replace("p50", "p95")
        print(f"{p95:<22}{pct(d['off'], 0.95):>10.0f}{pct(d['on'], 0.95):>10.0f}")
    print(f"{'pairs asked, all':<22}{sum(asked['off']):>10,}{sum(asked['on']):>10,}")
    print(f"{'search ms p50':<22}{statistics.median(total['off']):>10.0f}"
          f"{statistics.median(total['on']):>10.0f}")  # fmt: skip
    print(f"{'search ms p95':<22}{pct(total['off'], 0.95):>10.0f}{pct(total['on'], 0.95):>10.0f}")
    print(f"{'clusters shown':<22}{n_clusters['off']:>10}{n_clusters['on']:>10}")
    for key, label in (
        ("clusters", "same clusters"),
        ("sides", "same clusters and sides"),
        ("evidence", "same evidence and reason a cluster"),
        ("all", "the same answer"),
    ):
        print(f"{label:<36}{same[key]:>4} / {k} claims ({same[key] / k:.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
