"""The cascade's gate before the equivalence cross-encoder (issue 62, item 2): fitted on the tune
claims, then what it changes on dev.

    python -m bench cascade [--index default] [--tune 60] [--dev 139] [--lose 0.005] [--write]

1. Fit (`--tune` held-out train claims, the gate off): every pair the lazy complete-link asks the
   cross-encoder for, with the stack's probability at the cross-encoder's best score (`hi`, from
   the cheap features alone) and the exact one once scored. The floor is the highest `hi` under
   which at most `--lose` of the pairs that clear the cluster cut once scored fall.
2. Dev: each claim searched by the engine without the gate and with it (`EngineConfig.
   equivalence_ask_floor`), one process, taking turns (the order alternating claim by claim): the
   pairs asked, the equivalence stage's time, whether the clusters (their member sets), their
   sides and the evidence shown under each cluster stay the same.

T1-T5 with and without it: `perspect eval perspectrum --split dev --index default [--no-cascade]`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness

FLOORS = (0.15, 0.18, 0.2, 0.22, 0.24, 0.26, 0.28, 0.3)
WARM_UP = "Zoos should be closed, says the warm-up."  # not a claim of either set


class Recorder:
    """Every pair a search asks the equivalence model for: (its bound `hi`, its exact stacked
    probability), per search."""

    def __init__(self):
        import numpy as np

        from perspect.pipeline import clusters as clusters_mod

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


def fit(p, claims: list[str], rec: Recorder, lose: float) -> float:
    """The highest floor of FLOORS losing at most `lose` of the pairs that clear the cut."""
    import numpy as np

    for c in claims:
        p.search(c)
    cut = p.engine().clusters.cluster_cut()
    hi, prob = (np.array(x) for x in zip(*rec.rows, strict=True))
    clear = prob >= cut
    print(f"fit: {len(claims)} tune claims, {len(hi):,} pairs asked at the cluster cut {cut:.2f}, ")
    print(f"     {int(clear.sum())} of them clear it once scored\n")
    best, rows = cut, []
    for f in FLOORS:
        lost = int((clear & (hi < f)).sum())
        share = lost / max(1, clear.sum())
        rows.append([f"{f:.2f}", f"{(hi < f).mean():.1%}", f"{lost} ({share:.1%})"])
        if lost <= lose * clear.sum():
            best = f
    print(harness.table(["floor", "pairs left out", "clearing pairs lost"], rows))
    print(f"floor: {best:.2f} (the highest losing at most {lose:.1%})")
    return best


def write(model_dir: Path, floor: float, n: int, lose: float) -> None:
    """The floor into the pair model's manifest (`cascade.equivalence_ask_floor`)."""
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


def dev_run(p_off, p_on, claims: list[str], rec: Recorder, floor: float) -> None:
    """Each dev claim without the gate and with it, taking turns: what the gate changes."""
    engines = {"off": p_off, "on": p_on}
    asked: dict[str, list[int]] = {"off": [], "on": []}
    eq_ms: dict[str, list[float]] = {"off": [], "on": []}
    n_clusters = {"off": 0, "on": 0}
    got: dict[str, dict[str, list]] = {c: {} for c in claims}

    def searched(name: str):
        def run(claim: str):
            before = rec.asked
            res = engines[name].search(claim)
            return res, rec.asked - before

        return run

    def seen(name, claim, _ms, value) -> None:
        res, n = value
        asked[name].append(n)
        eq_ms[name].append(res.timings_ms.get("equivalence", 0.0))
        n_clusters[name] += len(res.clusters)
        got[claim][name] = shown(res)

    total = harness.taking_turns({k: searched(k) for k in engines}, claims, False, seen)
    same = {"clusters": 0, "sides": 0, "evidence": 0, "all": 0}
    sides = lambda s: {(x[0], x[1]) for x in s}  # noqa: E731
    ev = lambda s: {(x[0], x[2], x[3]) for x in s}  # noqa: E731
    for claim in claims:
        a_, b_ = got[claim]["off"], got[claim]["on"]
        same["clusters"] += {x[0] for x in a_} == {x[0] for x in b_}
        same["sides"] += sides(a_) == sides(b_)
        same["evidence"] += ev(a_) == ev(b_)
        same["all"] += a_ == b_
        if a_ != b_:
            print(f"differs: {claim} ({len(a_)} clusters without the gate, {len(b_)} with it)")
    k = len(claims)
    print(f"\ndev: {k} claims, each searched without the gate and with it (floor {floor:.2f})\n")
    rows = []
    for label, d in (("pairs asked", asked), ("equivalence ms", eq_ms), ("search ms", total)):
        for q in (0.5, 0.95):
            cells = (f"{harness.pct(d[s], q):,.0f}" for s in ("off", "on"))
            rows.append([f"{label} p{round(q * 100)}", *cells])
    rows.append(["pairs asked, all", f"{sum(asked['off']):,}", f"{sum(asked['on']):,}"])
    rows.append(["clusters shown", n_clusters["off"], n_clusters["on"]])
    print(harness.table(["", "no gate", "gate"], rows) + "\n")
    for key, label in (
        ("clusters", "same clusters"),
        ("sides", "same clusters and sides"),
        ("evidence", "same evidence and reason a cluster"),
        ("all", "the same answer"),
    ):
        print(f"{label:<36}{same[key]:>4} / {k} claims ({same[key] / k:.1%})")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for opt in ("index", "home", "data"):
        ap.add_argument(f"--{opt}", **harness.COMMON[opt])
    ap.add_argument("--tune", type=int, default=60, help="tune claims the floor is fitted on")
    ap.add_argument("--dev", type=int, default=139, help="dev claims searched after (0: none)")
    ap.add_argument("--lose", type=float, default=0.005, help="share of clearing pairs it may lose")
    ap.add_argument("--write", action="store_true", help="keep the floor in the pair model")
    a = ap.parse_args(argv)
    tune = harness.claims("tune", a.tune, a.data)
    if not tune:
        return 0
    from perspect import Perspect
    from perspect.pipeline.engine import EngineConfig

    rec = Recorder()
    off = EngineConfig(equivalence_ask_floor=0.0)  # no gate
    p_off = Perspect.open(a.index, home=a.home, config=off)
    p_off.search(WARM_UP)
    floor = fit(p_off, tune, rec, a.lose)
    if a.write:
        write(p_off.engine().model.origin, floor, len(tune), a.lose)
    if a.dev <= 0:
        return 0
    p_on = Perspect.open(a.index, home=a.home, config=replace(off, equivalence_ask_floor=floor))
    p_on.search(WARM_UP)
    dev_run(p_off, p_on, harness.claims("dev", a.dev, a.data), rec, floor)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
