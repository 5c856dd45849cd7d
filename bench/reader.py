"""Answers read as a user would: sides, reasons, evidence and mined sources, judged by a person.

Why a person: a valid span is not a reason that backs anything, and a side is right only when it
is the perspective's attitude to *this* claim (issue 41's reader study: 62 % of sides right, 20 %
of reasons arguing the opposite). The claims are written for these benches (none is PERSPECTRUM's:
`answers --check`); their sets live in the harness (`default`, `argument`, `documents`).

- `answers`: every cluster's side, cited reason, top evidence verdict and news; `--judged FILE`
  re-prints a saved run with its judgments (JSON: claim -> cluster representative -> {side,
  reason, evidence} each "right"/"wrong"/"opposite"/"n/a") and counts them.
- `form` / `tally` (issue 55): every cluster of saved runs judged one by one, blind to the run:
  side right / wrong / no-side / off-topic, reason backs / opposite / none / unrelated, top
  evidence backs / against / irrelevant / none; counted per run on the clusters on the claim.
- `reasons` (issue 41): cited reasons with the joint reader's read-back off, printed without its
  probabilities. Judging only the reasons a search keeps cannot say what the read-back dropped,
  and judging with the reader's call in view leans on it.
- `sources` (issue 45): three claims outside PERSPECTRUM, ten hand-written articles each
  (`bench/sources/*.jsonl`: four arguing each side, two only reporting), answered before (the
  curated pool) and after (`--name`: a copy of `--index` with the articles added through
  `Indexer.add`, built only when missing). Mined sides are counted against the article's; the
  counts are a floor for a person's reading (an arguing article's sentence can be background).

    python -m bench reader answers --index default [--json OUT] [--k 10] [--set argument]
        [--no-argument]
    python -m bench reader answers --home DIR --set documents   # UKP pages added as documents
    python -m bench reader answers --judged bench/reader_judged.json
    python -m bench reader answers --check [--data DIR]
    python -m bench reader form RUN.json [RUN.json ...] --out FORM.jsonl [--parts N]
    python -m bench reader tally FORM.key.json JUDGED.jsonl [JUDGED.jsonl ...]
    python -m bench reader reasons --index default [--home DIR] --json OUT
    python -m bench reader reasons --judged bench/reader/reasons-fresh-2026-11-28.json
    python -m bench reader sources --index default [--name sources] [--home DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness
from bench.harness import ARGUMENT_CLAIMS, CLAIMS, DOCUMENT_CLAIMS

# ---- answers -----------------------------------------------------------------------------------


def show_answers(runs: list[dict], judged: dict | None = None) -> Counter:
    counts: Counter = Counter()
    for ans in runs:
        claim = ans["claim"]
        print(f"\n## {claim}")
        marks = (judged or {}).get(claim, {})
        for c in ans.get("clusters", []):
            rep = c["representative"]["text"]
            why = (c.get("why") or {}).get("sentence")
            ev = c.get("evidence") or []
            top = ev[0]["verdict"] if ev else "none"
            print(f"- [{c['side_label']} {c['strength']:.2f}] {rep}")
            src = (c.get("why") or {}).get("source")
            found_in = f" ({src['pool']}: {src['outlet'] or src['article_id']})" if src else ""
            print(f"    why: {why or 'no backing sentence found'}{found_in}")
            for m in c["members"]:
                if m.get("source"):
                    print(f"    mined: {m['text'][:200]} ({m['source']['outlet']})")
            print(f"    top evidence: {top}" + (f" -- {ev[0]['text'][:160]}" if ev else ""))
            m = marks.get(rep)
            if m:
                print(f"    judged: {m}")
                for what, v in m.items():
                    counts[f"{what}:{v}"] += 1
        for n in ans.get("news", []):
            print(f"  news {n['relation']} ({n['probability']:.2f}): {n['text'][:140]}")
    return counts


def check(data: Path) -> int:
    """None of the claims is a PERSPECTRUM claim (casefolded match)."""
    import difflib

    from perspect.core.datasets.perspectrum import load_claims

    if not harness.have_perspectrum(data):
        return 0
    ours = [c.casefold().rstrip(".") for c in CLAIMS + ARGUMENT_CLAIMS + DOCUMENT_CLAIMS]
    for split in ("train", "dev"):
        for c in load_claims(data, split):
            theirs = c.text.casefold().rstrip(".")
            for o in ours:
                if difflib.SequenceMatcher(a=o, b=theirs).ratio() > 0.85:
                    raise SystemExit(f"{c.text!r} is (nearly) a PERSPECTRUM {split} claim")
    print(f"{len(ours)} claims, none in PERSPECTRUM train/dev")
    return 0


def answers(args: argparse.Namespace) -> int:
    """Sides, cited reasons, top evidence and news of the written claims, printed for a person."""
    if args.check:
        return check(args.data)
    if args.judged:
        doc = json.loads(args.judged.read_text())
        counts = show_answers(doc["answers"], doc.get("judged", {}))
        print("\n" + json.dumps(dict(sorted(counts.items())), indent=1))
        return 0
    from perspect.api import Perspect
    from perspect.pipeline.engine import EngineConfig

    config = EngineConfig(argument=not args.no_argument)  # off: as before the argument model
    p = Perspect.open(args.index, home=args.home, config=config)
    runs = [p.search(claim, k=args.k).to_json() for claim in harness.SETS[args.set]]
    harness.write_json(args.json, {"answers": runs, "judged": {}})
    show_answers(runs)
    return 0


def _answers_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--k", type=int, default=10, help="clusters per answer")
    p.add_argument("--set", choices=sorted(harness.SETS), default="default", help="which claims")
    p.add_argument("--no-argument", action="store_true", help="answer as before the argument model")
    p.add_argument("--judged", type=Path, help="a saved run with judgments: re-print and count")
    p.add_argument("--check", action="store_true", help="none of the claims is PERSPECTRUM's")


# ---- the blind form and its tally --------------------------------------------------------------


def form(args: argparse.Namespace) -> int:
    """A blind judging form over saved `answers --json` runs: one shuffled item per cluster.
    Each has an opaque id (the key to runs kept in FORM.key.json); `--parts` files."""
    items, key = [], {}
    for run in args.runs:
        for ans in json.loads(run.read_text())["answers"]:
            for i, c in enumerate(ans.get("clusters", [])):
                ev = c.get("evidence") or []
                item = {
                    "claim": ans["claim"],
                    "perspective": c["representative"]["text"],
                    "side_shown": c["side_label"],
                    "reason": (c.get("why") or {}).get("sentence"),
                    "top_evidence": ev[0]["text"][:900] if ev else None,
                    "top_evidence_verdict": ev[0]["verdict"] if ev else None,
                }
                iid = hashlib.sha1(f"{run}|{ans['claim']}|{i}".encode()).hexdigest()[:10]
                key[iid] = {"run": run.stem, "claim": ans["claim"], "rank": i,
                            "side_shown": c["side_label"],
                            "verdict": ev[0]["verdict"] if ev else None}  # fmt: skip
                items.append({"id": iid, **item})
    random.Random(5).shuffle(items)
    out, parts = args.out, args.parts
    for p in range(parts):
        part = items[p::parts]
        name = out if parts == 1 else out.with_name(f"{out.stem}.{p + 1}{out.suffix}")
        name.write_text("".join(json.dumps(x) + "\n" for x in part))
        print(f"{name}: {len(part)} items")
    out.with_suffix(".key.json").write_text(json.dumps(key, indent=1) + "\n")
    return 0


SIDES, SHOWN_EVIDENCE = ("right", "wrong", "no-side"), ("backs", "against", "irrelevant")


def _share(n: int, of: int) -> float:
    return round(n / max(1, of), 3)


def tally(args: argparse.Namespace) -> int:
    """Judged forms counted per run: sides, reasons and top evidence of clusters on the claim.
    Sides right / wrong / no side, reasons backing / opposite, evidence backing / against."""
    key = json.loads(args.key.read_text())
    lines = [line for f in args.judged for line in f.read_text().splitlines() if line.strip()]
    marks = {j["id"]: j for j in map(json.loads, lines)}
    counts: dict[str, Counter] = {}
    for iid, k in key.items():
        j = marks.get(iid)
        if j is None:
            continue
        c = counts.setdefault(k["run"], Counter())
        c["clusters"] += 1
        on = j["side"] != "off-topic"
        c[f"side:{j['side']}"] += 1
        shown_side = not k["side_shown"].startswith("unclear")  # "leans X" is a side too
        if on:
            c["on_topic"] += 1
            c[f"reason:{j['reason']}"] += 1
            c[f"evidence:{j['evidence']}"] += 1
        if on and k.get("verdict") == "supports":  # the top paragraph shown as backing it
            c["supports_shown"] += 1
            c["supports_right"] += j["evidence"] == "backs"
        if on and shown_side:
            c["on_topic_sided"] += 1
            c[f"sided:{j['side']}"] += 1
    out = {}
    for run, c in sorted(counts.items()):
        sided = c["on_topic_sided"]
        reasons = c["reason:backs"] + c["reason:opposite"] + c["reason:unrelated"]
        shown_ev = sum(c[f"evidence:{k}"] for k in SHOWN_EVIDENCE)
        out[run] = {
            "clusters": c["clusters"],
            "on_topic": c["on_topic"],
            "sides": {
                "shown_on_a_side": sided,
                **{k.replace("-", "_"): _share(c[f"sided:{k}"], sided) for k in SIDES},
                "unclear_share_of_on_topic": round(1 - sided / max(1, c["on_topic"]), 3),
            },
            "reasons": {
                "shown_share": _share(reasons, c["on_topic"]),
                "backs": _share(c["reason:backs"], reasons),
                "opposite": _share(c["reason:opposite"], reasons),
            },
            "top_evidence": {
                "shown": shown_ev,
                **{k: _share(c[f"evidence:{k}"], shown_ev) for k in SHOWN_EVIDENCE},
                "supports_verdict_right": _share(c["supports_right"], c["supports_shown"]),
                "supports_verdicts": c["supports_shown"],
            },
            "raw": dict(sorted(c.items())),
        }
    print(json.dumps(out, indent=1))
    return 0


# ---- cited reasons before and after the joint reader's read-back -------------------------------

# written for `reasons` after `answers`'s claims were judged; none is in PERSPECTRUM
REASON_CLAIMS = [
    "Public transport should be free",
    "Voting should be compulsory",
    "Fast fashion should be taxed",
    "Remote work is better for employees than office work",
    "Children should not use social media before the age of sixteen",
    "Tourists should pay a fee to enter historic city centres",
    "Space tourism should be banned",
    "Organ donation should be opt-out",
    "Sugar taxes reduce obesity",
    "Private schools should be abolished",
    "Autonomous weapons should be prohibited",
    "Standardised testing should be scrapped",
    "Wealthy countries should accept more refugees",
    "Meat consumption should be taxed",
    "Online anonymity should be ended",
    "Gambling advertising should be banned",
]


def cite(index: str, home: Path | None) -> tuple[list[dict], dict]:
    """Every cluster's cited reason with the read-back off, and the reader's P(entail) /
    P(contradict) of (reason, perspective); the reader's cuts."""
    from perspect.api import Perspect
    from perspect.core.model.decisions import RelationCuts

    p = Perspect.open(index, home=home)
    stage = p.engine().evidence_stage
    reader, cuts = stage.reader, stage.reader_cuts
    if reader is None or cuts is None:
        raise SystemExit("the bundle names no reasons' reader: nothing to compare")
    stage.reader_cuts = RelationCuts(0.0, 1.01)  # every cited reason passes
    rows = []
    for claim in REASON_CLAIMS:
        for c in p.search(claim).clusters:
            if c.why is not None:
                rows.append({"claim": claim, "perspective": c.representative.text,
                             "reason": c.why.sentence})  # fmt: skip
    probs = reader.inference([(r["reason"], r["perspective"]) for r in rows])
    for r, q in zip(rows, probs, strict=True):
        r["entail"], r["contradict"] = round(float(q[0]), 3), round(float(q[2]), 3)
    return rows, {"entail_at": cuts.entail_at, "contradict_at": cuts.contradict_at}


def count_reasons(doc: dict) -> None:
    """What each cut shows: every cited reason, those the reader reads back, and of those the
    ones that do not only restate their perspective (what a search shows: pipeline.why)."""
    from perspect.pipeline import why

    rows, cuts = doc["reasons"], doc["cuts"]
    entail_at, contradict_at = cuts["entail_at"], cuts["contradict_at"]
    read = [r for r in rows if r["entail"] >= entail_at and r["contradict"] < contradict_at]
    shipped = [r for r in read if not why.restates(r["perspective"], r["reason"])]
    shown = {"every cited reason": rows, "read back": read, "+ no restatement (shipped)": shipped}
    for name, kept in shown.items():
        c = Counter(r["judged"] for r in kept)
        n = max(1, len(kept))
        print(
            f"{name:<27} shown {len(kept):>3}  backs {c['backs']:>3} "
            f"({100 * c['backs'] / n:.1f} %)  opposite {c['opposite']:>2} "
            f"({100 * c['opposite'] / n:.1f} %)  unrelated {c['unrelated']:>2}"
        )


def reasons(args: argparse.Namespace) -> int:
    """Cited reasons with the joint reader's read-back off, printed to be judged blind.
    `--judged`: what every reason, the read-back and the shipped cut would show."""
    if args.judged:
        count_reasons(json.loads(args.judged.read_text()))
        return 0
    rows, cuts = cite(args.index, args.home)
    harness.write_json(args.json, {"claims": REASON_CLAIMS, "cuts": cuts, "reasons": rows})
    for i, r in enumerate(rows):  # no probabilities here: judge blind
        print(f"[{i}] {r['claim']}\n   perspective: {r['perspective']}\n   reason: {r['reason']}\n")
    return 0


# ---- the reader's own sources ------------------------------------------------------------------

ARTICLES = Path(__file__).resolve().parent / "sources"
SOURCE_CLAIMS = {
    "zoos.jsonl": "Zoos should be closed",
    "crypto.jsonl": "Cryptocurrency should be banned",
    "ai_pause.jsonl": "Artificial intelligence research should be paused",
}
# what each article was written as: 1-4 argue for their file's claim, 5-8 against, 9-10 report
KIND = {
    f"{topic}-{i}": "support" if i <= 4 else "oppose" if i <= 8 else "report"
    for topic in ("zoo", "cr", "ai")
    for i in range(1, 11)
}


def prepare(base: str, name: str, home: Path) -> None:
    """Index `name`: a copy of `base` (its folder, as is) with the articles added as documents."""
    from perspect.indexer.indexer import Indexer, Source

    if (home / name).is_dir():
        return
    shutil.copytree(home / base, home / name, symlinks=True)
    articles = [Source("documents", ARTICLES / f) for f in SOURCE_CLAIMS]
    ms, _ = harness.timed(lambda: Indexer(name, home=home).add(articles))
    print(f"index {name}: {base} + {len(SOURCE_CLAIMS) * 10} articles in {ms / 1000:.1f} s")


def _member(m) -> dict:
    if (src := m.source) is None:
        return {"text": m.text, "article": None, "outlet": None, "kind": "curated"}
    kind = KIND.get(src.article_id)
    return {"text": m.text, "article": src.article_id, "outlet": src.outlet, "kind": kind}


def answer_with_sources(p, claim: str) -> dict:
    """One search: its milliseconds, coverage, and clusters with each member's article and kind."""
    ms, res = harness.timed(lambda: p.search(claim))
    clusters = [
        {"stance": cl.stance, "leans": cl.leans, "strength": round(cl.strength, 3),
         "members": [_member(m) for m in cl.members]}
        for cl in res.clusters
    ]  # fmt: skip
    cov = res.coverage
    return {
        "ms": round(ms),
        "coverage": {"support": cov.support, "oppose": cov.oppose, "warning": cov.warning},
        "clusters": clusters,
    }


def source_counts(run: dict) -> dict:
    mined = [(cl["stance"], m) for cl in run["clusters"] for m in cl["members"] if m["article"]]
    sides = {cl["stance"] for cl in run["clusters"] if any(m["article"] for m in cl["members"])}
    arguing = [(s, m) for s, m in mined if m["kind"] in ("support", "oppose")]
    unclear = [(cl["leans"], m) for cl in run["clusters"] if cl["stance"] == "unclear"
               for m in cl["members"] if m["article"]]  # fmt: skip
    return {
        "mined_shown": len(mined),
        "from_reporting_articles": sum(m["kind"] == "report" for _, m in mined),
        "side_as_article": sum(s == m["kind"] for s, m in arguing),
        "side_against_article": sum(s not in (m["kind"], "unclear") for s, m in arguing),
        "unclear": sum(s == "unclear" for s, _ in arguing),
        "unclear_leaning_as_article": sum(lean == m["kind"] for lean, m in unclear),
        "mined_sides": sorted(sides - {"unclear"}),
    }


def show_sources(claim: str, run: dict) -> None:
    cov = run["coverage"]
    print(f"\n## {claim}  ({run['ms']} ms; support {cov['support']} / oppose {cov['oppose']})")
    if cov["warning"]:
        print(f"   ! {cov['warning']}")
    for cl in run["clusters"]:
        lean = f", leans {cl['leans']}" if cl["leans"] else ""
        print(f"  [{cl['stance']} {cl['strength']:.2f}{lean}]")
        for m in cl["members"]:
            where = f"  <- {m['article']} ({m['kind']})" if m["article"] else ""
            print(f"     - {m['text'][:110]}{where}")


def sources(args: argparse.Namespace) -> int:
    """Perspectives mined from hand-written articles: sides shown against the articles' own.
    Also reporting sentences shown as arguments, search ms before and after the articles."""
    from perspect import Perspect
    from perspect.core import paths

    home = args.home or paths.home()
    prepare(args.index, args.name, home)
    claims = list(SOURCE_CLAIMS.values())
    out: dict = {}
    for label, name in (("before", args.index), ("after", args.name)):
        with Perspect.open(name, home=home) as p:
            p.search("warm-up: the models load once")
            out[label] = {claim: answer_with_sources(p, claim) for claim in claims}
    for claim in claims:
        for label in ("before", "after"):
            print(f"\n# {label}", end="")
            show_sources(claim, out[label][claim])
        out["after"][claim]["counts"] = source_counts(out["after"][claim])
        print("\ncounts:", json.dumps(out["after"][claim]["counts"]))
    after = [out["after"][c]["counts"] for c in claims]
    total = {k: sum(c[k] for c in after) for k in after[0] if k != "mined_sides"}
    both = sum(len(c["mined_sides"]) == 2 for c in after)
    print(f"\nall three claims: {json.dumps(total)}; both sides mined for {both}/3 claims")
    p50 = {label: harness.pct([r["ms"] for r in out[label].values()], 0.5) for label in out}
    print(f"search ms (median of 3): before {p50['before']}, after {p50['after']}")
    harness.write_json(args.json, out)
    return 0


def _form_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", type=Path, nargs="+", help="saved `answers --json` runs")
    p.add_argument("--out", type=Path, required=True, help="the form (JSON lines)")
    p.add_argument("--parts", type=int, default=1, help="split among this many judges")


def _tally_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("key", type=Path, help="the form's FORM.key.json")
    p.add_argument("judged", type=Path, nargs="+", help="judged forms (JSON lines)")


def _reasons_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judged", type=Path, help="a saved run with each reason's 'judged': count")


def _named(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="sources", help="the index made with the articles (after)")


def main(argv: list[str] | None = None) -> int:
    return harness.commands(
        __doc__,
        {
            "answers": (answers, ["index", "home", "data", "json"], _answers_args),
            "form": (form, [], _form_args),
            "tally": (tally, [], _tally_args),
            "reasons": (reasons, ["index", "home", "json"], _reasons_args),
            "sources": (sources, ["index", "home", "json"], _named),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
