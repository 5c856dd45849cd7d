"""What a reader meets, judged with the judged set's form (issue 71): every shown cluster's
representative against the claim (for / against / no side / off topic), its cited reason and its
top evidence paragraph against the perspective, for claims written for the reader bench (none
tuned on) and the judged set's `report` web claims (none tuned on), beside a baseline run.

    python -m bench bearing run --index default --label after [--home DIR] [--baseline]
    python -m bench bearing items --out DIR      # unjudged items of every run, as judge batches
    python -m bench bearing tally --judgments DIR  # the two judges' labels -> reader-labels.jsonl
    python -m bench bearing score                # the figures of every run, from the labels

Why judged items and not a model's reading: a sentence on the topic is not a reason that backs
anything, and only a reader tells them apart (docs/judged-set.md). Items a judge already labelled
(the judged set, earlier runs) are read back; the rest are judged twice, blind to the run and the
side shown. Runs are kept in bench/judged/runs/ (ids, sides and the claims only).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import harness  # noqa: E402
from bench.harness import ARGUMENT_CLAIMS, CLAIMS  # noqa: E402
from perspect.lab import judged  # noqa: E402

RUNS = judged.HERE / "runs"  # ids, sides and item keys only (the texts are third-party)
TEXTS = Path(os.environ.get("PERSPECT_RUN_TEXTS", ROOT.parent / "runs-texts"))  # outside the repo
READER = "reader-labels.jsonl"  # labels of the runs' items (two judges, blind), beside labels.jsonl


def claims_of(which: str) -> list[str]:
    if which == "ours":
        return CLAIMS + ARGUMENT_CLAIMS
    return [c.text for c in judged.load_claims() if c.split == "report" and c.source == "internet"]


def run(args) -> int:
    from perspect.api import Perspect
    from perspect.pipeline.engine import EngineConfig

    cfg = EngineConfig(bearing=not args.baseline, debate_sides=not args.baseline)
    RUNS.mkdir(parents=True, exist_ok=True)
    out = []
    with Perspect.open(args.index, home=args.home, model=args.model, config=cfg) as p:
        for which in ("ours", "web"):
            for claim in claims_of(which):
                res = p.search(claim, k=args.k).to_json()
                clusters = []
                for c in res["clusters"]:
                    why, ev = c.get("why") or {}, (c.get("evidence") or [None])[0]
                    clusters.append({
                        "pid": c["representative"]["id"], "text": c["representative"]["text"],
                        "side": c["stance"], "why": why.get("sentence"),
                        "top_evidence": ev["id"] if ev else None,
                        "top_evidence_text": ev["text"] if ev else None,
                    })  # fmt: skip
                out.append({"set": which, "claim": claim, "clusters": clusters,
                            "took_ms": res["took_ms"]})  # fmt: skip
                print(f"{which}: {claim[:60]}: {len(clusters)} clusters", flush=True)
    TEXTS.mkdir(parents=True, exist_ok=True)
    (TEXTS / f"{args.label}.json").write_text(json.dumps(out, indent=0) + "\n")
    path = RUNS / f"{args.label}.json"
    path.write_text(json.dumps(ids_only(out), indent=0) + "\n")
    print(f"-> {path} (texts: {TEXTS})")
    return 0


def ids_only(rows: list[dict]) -> list[dict]:
    """A run as committed: each cluster's perspective id, side and the keys of its items."""
    out = []
    for a in rows:
        cl = []
        for c in a["clusters"]:
            cl.append({"pid": c["pid"], "side": c["side"], "top_evidence": c.get("top_evidence"),
                       "rc": "rc:" + _key(a["claim"], c["text"]),
                       "rw": "rw:" + _key(c["text"], c["why"]) if c.get("why") else None,
                       "re": "re:" + _key(c["text"], c["top_evidence_text"])
                       if c.get("top_evidence_text") else None})  # fmt: skip
        out.append({"set": a["set"], "claim": a["claim"], "clusters": cl, "took_ms": a["took_ms"]})
    return out


def _key(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:16]


def run_items(run_rows: list[dict]) -> list[dict]:
    """The items a run shows: (claim, representative), (perspective, reason), (perspective, top
    evidence paragraph), each with a stable id from its texts."""
    items = []
    for a in run_rows:
        for c in a["clusters"]:
            items.append({"id": "rc:" + _key(a["claim"], c["text"]), "q": "cp",
                          "claim": a["claim"], "perspective": c["text"]})  # fmt: skip
            if c.get("why"):
                items.append({"id": "rw:" + _key(c["text"], c["why"]), "q": "ps",
                              "perspective": c["text"], "paragraph": f">>> {c['why']} <<<"})  # fmt: skip
            if c.get("top_evidence_text"):
                items.append({"id": "re:" + _key(c["text"], c["top_evidence_text"]), "q": "pe",
                              "perspective": c["text"],
                              "paragraph": c["top_evidence_text"]})  # fmt: skip
    return items


def items(args) -> int:
    known = _labels()
    todo = {}
    for path in sorted(TEXTS.glob("*.json")):
        for it in run_items(json.loads(path.read_text())):
            if it["id"] not in known:
                todo[it["id"]] = it
    write_batches(list(todo.values()), args.out, args.size, seed=7)
    return 0


def write_batches(todo: list[dict], out: Path, size: int, seed: int) -> None:
    """Each item in two batches of its own, one per judge (`reader-REP-NN.jsonl`, shuffled apart),
    the files `tally` joins."""
    import random

    out.mkdir(parents=True, exist_ok=True)
    for rep in (0, 1):
        order = list(todo)
        random.Random(rep + seed).shuffle(order)
        for n in range(0, len(order), size):
            path = out / f"reader-{rep}-{n // size:02d}.jsonl"
            path.write_text(
                "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in order[n : n + size])
            )
            print(path)


def _labels() -> dict[str, str]:
    """Reader-bench labels (agreed) by item id, with the judged set's (claim, perspective) ones
    keyed the same way."""
    out = {}
    path = judged.HERE / READER
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("label"):
                out[r["id"]] = r["label"]
    claims = {c.id: c.text for c in judged.load_claims()}
    ptext = judged.perspective_texts()
    for r in judged.read_jsonl(judged.HERE / "labels.jsonl"):
        if r["q"] == "cp" and r.get("label"):
            pid = r["id"].split(":")[2]
            out.setdefault("rc:" + _key(claims[r["claim"]], ptext[pid]), r["label"])
    return out


def tally(args) -> int:
    """Join two judges' outputs (out-reader-REP-NN.jsonl beside reader-REP-NN.jsonl): an item
    both labelled alike is kept; agreement per question is printed."""
    got: dict[str, dict[int, str]] = {}
    qs: dict[str, str] = {}
    for batch in sorted(args.judgments.glob("reader-*.jsonl")):
        rep = int(batch.stem.split("-")[1])
        out = batch.with_name("out-" + batch.name)
        for line in batch.read_text().splitlines():
            it = json.loads(line)
            qs[it["id"]] = it["q"]
        if out.is_file():
            for line in out.read_text().splitlines():
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                got.setdefault(r.get("id"), {})[rep] = r.get("label")
    rows, agree = [], Counter()
    for i, labs in got.items():
        if 0 in labs and 1 in labs and i in qs:
            agree[(qs[i], labs[0] == labs[1])] += 1
            rows.append({"id": i, "q": qs[i], "labels": [labs[0], labs[1]],
                         "label": labs[0] if labs[0] == labs[1] else None})  # fmt: skip
    path = judged.HERE / READER
    old = {r["id"]: r for r in judged.read_jsonl(path)}
    old.update({r["id"]: r for r in rows})
    path.write_text("".join(json.dumps(r) + "\n" for r in old.values()))
    for q in sorted({q for q, _ in agree}):
        n = agree[(q, True)] + agree[(q, False)]
        print(f"{q}: {n} items judged twice, {agree[(q, True)] / n:.3f} agree")
    return 0


def score(args) -> int:
    labels = _labels()
    table = {}
    for path in sorted(RUNS.glob("*.json")):
        rows = json.loads(path.read_text())
        for which in ("ours", "web"):
            got: Counter = Counter()
            answered = both = 0
            part = [a for a in rows if a["set"] == which]
            for a in part:
                sides = {c["side"] for c in a["clusters"] if c["side"] != "unclear"}
                answered += bool(a["clusters"])
                both += sides == {"support", "oppose"}
                for c in a["clusters"]:
                    lab = labels.get(c["rc"])
                    got["clusters"] += 1
                    got[f"judged:{lab is not None}"] += 1
                    if c["side"] == "unclear":
                        got["unclear"] += 1
                    elif lab is not None:
                        got["sided_judged"] += 1
                        right = (lab == "for") == (c["side"] == "support") and lab in (
                            "for",
                            "against",
                        )
                        got[
                            "right" if right else ("wrong" if lab in ("for", "against") else lab)
                        ] += 1
                    if lab in ("for", "against", "no_side"):
                        got["on_topic"] += 1
                        if c.get("rw"):
                            got["with_reason"] += 1
                            w = labels.get(c["rw"])
                            if w:
                                got[f"reason:{w}"] += 1
                        e = labels.get(c["re"]) if c.get("re") else None
                        got[
                            f"evidence:{e or ('none' if not c.get('top_evidence') else 'unjudged')}"
                        ] += 1
            n_side = max(1, got["sided_judged"])
            n_on = max(1, got["on_topic"])
            n_r = max(1, sum(v for k, v in got.items() if k.startswith("reason:")))
            n_e = max(
                1,
                sum(
                    v
                    for k, v in got.items()
                    if k.startswith("evidence:") and k != "evidence:unjudged"
                ),
            )
            table[(path.stem, which)] = {
                "claims": len(part), "answered": round(answered / max(1, len(part)), 3),
                "both_sides": round(both / max(1, len(part)), 3), "clusters": got["clusters"],
                "judged": got["judged:True"],
                "right": round(got["right"] / n_side, 3), "wrong": round(got["wrong"] / n_side, 3),
                "no_side": round(got["no_side"] / n_side, 3), "off_topic": round(got["off_topic"] / n_side, 3),
                "unclear": round(got["unclear"] / max(1, got["clusters"]), 3),
                "reasons_under": round(got["with_reason"] / n_on, 3),
                "reason_backs": round(got["reason:for"] / n_r, 3),
                "reason_against": round(got["reason:against"] / n_r, 3),
                "evidence_backs": round(got["evidence:for"] / n_e, 3),
                "evidence_against": round(got["evidence:against"] / n_e, 3),
                "evidence_none": round(got["evidence:none"] / n_e, 3),
            }  # fmt: skip
    cols = list(next(iter(table.values())).keys()) if table else []
    print("| run | set | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for (run_name, which), row in table.items():
        print(f"| {run_name} | {which} | " + " | ".join(str(row[c]) for c in cols) + " |")
    return 0


def flips(args) -> int:
    """A claim and its negation (by rule, perspect.core.datasets.negation): of the perspectives
    both searches show on a side, the share shown on opposite sides."""
    from perspect.api import Perspect
    from perspect.core.datasets.negation import negate
    from perspect.pipeline.engine import EngineConfig

    cfg = EngineConfig(bearing=not args.baseline, debate_sides=not args.baseline)
    shared = flipped = pairs = 0
    with Perspect.open(args.index, home=args.home, model=args.model, config=cfg) as p:
        for claim in CLAIMS + ARGUMENT_CLAIMS:
            neg = negate(claim)
            if neg == claim:
                continue
            sides = []
            for text in (claim, neg):
                res = p.search(text, k=args.k)
                sides.append({m.id: c.stance for c in res.clusters for m in c.members
                              if c.stance != "unclear"})  # fmt: skip
            both = set(sides[0]) & set(sides[1])
            pairs += 1
            shared += len(both)
            flipped += sum(sides[0][i] != sides[1][i] for i in both)
    print(json.dumps({"label": args.label, "claim_pairs": pairs, "shared": shared,
                      "flipped": flipped, "flip_rate": round(flipped / max(1, shared), 4)}))  # fmt: skip
    return 0


def _reading(p, label_required: bool = False) -> None:
    """The options of a reading of the bench's claims (`run`, `flips`)."""
    p.add_argument("--model", type=Path, default=None, help="the pair model (default the bundle's)")
    p.add_argument("--label", required=label_required, default="")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--baseline", action="store_true", help="the previous decision (no bearing)")


def main(argv=None) -> int:
    return harness.commands(
        __doc__,
        {
            "run": (run, ("index", "home"), lambda p: _reading(p, label_required=True)),
            "items": (
                items,
                (),
                lambda p: (
                    p.add_argument("--out", type=Path, required=True),
                    p.add_argument("--size", type=int, default=300),
                ),
            ),
            "flips": (flips, ("index", "home"), _reading),
            "tally": (tally, (), lambda p: p.add_argument("--judgments", type=Path, required=True)),
            "score": (score, (), None),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
