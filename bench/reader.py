"""Read answers as a user would: claims written for this bench (not PERSPECTRUM's), every cluster's
side, cited reason, top evidence verdict and news, printed for a person to judge.

Why a person: a valid span is not a reason that backs anything, and a side is right only when it
is the perspective's attitude to *this* claim (issue 41's reader study: 62 % of sides right, 20 %
of reasons arguing the opposite). The script prints; `--judged FILE` re-prints a saved run with
the judgments recorded in it (JSON: claim -> cluster representative -> {side, reason, evidence}
each "right"/"wrong"/"opposite"/"n/a") and counts them.

    python bench/reader.py --index default [--json OUT] [--k 10] [--set argument] [--no-argument]
    python bench/reader.py --home DIR --set documents   # an index with UKP pages as documents
    python bench/reader.py --judged bench/reader_judged.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

# written for this bench; none is a PERSPECTRUM claim (checked by --check)
CLAIMS = [
    "Smartphones should be banned in schools",
    "Social media companies should be regulated like tobacco companies",
    "Governments should stop funding crewed missions to Mars",
    "More nuclear power plants are needed",
    "Out of town shopping malls damage town centres",
    "Zoos should be closed",
    "Homework should be abolished in primary schools",
    "Self-driving cars should be allowed on public roads",
    "Tipping in restaurants should be abolished",
    "Animal testing should be banned",
    "The death penalty should be abolished",
    "Junk food advertising aimed at children should be banned",
    "Four-day working weeks should become the norm",
    "Governments should introduce a universal basic income",
    "Violent video games make children aggressive",
    "Genetically modified crops are safe to eat",
    "Cities should ban cars from their centres",
    "Plastic bags should be banned",
    "School uniforms should be compulsory",
    "Professional athletes are overpaid",
    "Hunting for sport should be illegal",
    "Cash should be phased out in favour of digital payments",
    "Vaccination should be mandatory for children",
    "Nuclear weapons make the world safer",
]

# issue 55's set: written for it, in words PERSPECTRUM does not use; the last six are on topics no
# curated perspective covers (what the argument model must place by itself)
ARGUMENT_CLAIMS = [
    "Pet owners should need a licence",
    "Town councils should stop mowing road verges to help wildlife",
    "Cosmetics tested on animals should not be sold",
    "Keeping orcas in aquariums is cruel",
    "Cheap flights should carry a carbon tax",
    "Teenagers should be allowed to vote at sixteen",
    "Exams are a poor measure of what pupils know",
    "Wealthy people should pay a higher share of their income in tax",
    "Smoking should be banned in all public outdoor places",
    "Rich countries should open their borders to more refugees",
    "Organ donation should be automatic unless people refuse",
    "Sugary drinks should carry a health tax",
    "Police officers should wear body cameras at all times",
    "Space agencies spend money better used on Earth",
    "Nuclear energy is the best way to cut carbon emissions",
    "Couples should be free to edit the DNA of their embryos",
    "Libraries should be open around the clock",
    "Employers should not be allowed to read staff emails",
    "Electric scooters should be banned from pavements",
    "Museums should return artefacts taken during colonial rule",
    "Supermarkets should be forced to donate unsold food",
    "Daylight saving time should be scrapped",
]
# on the two UKP topics no argument model row was trained on, for an index to which a reader added
# that topic's web pages as documents (the "documents" set: mined arguments and reasons from
# documents; bench/RESULTS.md, "Reasons from documents")
DOCUMENT_CLAIMS = [
    "Adults should be allowed to buy cannabis legally",
    "Legal marijuana would make roads more dangerous",
    "Cannabis should be available on prescription for chronic pain",
    "Governments should tax marijuana sales instead of jailing users",
    "The minimum wage should be raised to a living wage",
    "A higher minimum wage costs young people their jobs",
    "Small businesses cannot afford a higher minimum wage",
    "Employers should be free to set their own wages",
]
SETS = {"default": CLAIMS, "argument": ARGUMENT_CLAIMS, "documents": DOCUMENT_CLAIMS}


def answers(
    index: str, k: int, claims=CLAIMS, argument: bool = True, home: Path | None = None
) -> list[dict]:
    from perspect.api import Perspect
    from perspect.pipeline.engine import EngineConfig

    p = Perspect.open(index, home=home, config=EngineConfig(argument=argument))
    out = []
    for claim in claims:
        a = p.search(claim, k=k)
        out.append(a.to_json())
    return out


def show(runs: list[dict], judged: dict | None = None) -> Counter:
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


def check() -> None:
    """None of the claims is a PERSPECTRUM claim (casefolded match)."""
    import difflib

    from perspect.core.datasets.perspectrum import load_claims

    ours = [c.casefold().rstrip(".") for c in CLAIMS + ARGUMENT_CLAIMS + DOCUMENT_CLAIMS]
    for split in ("train", "dev"):
        for c in load_claims(Path("data/perspectrum"), split):
            theirs = c.text.casefold().rstrip(".")
            for o in ours:
                if difflib.SequenceMatcher(a=o, b=theirs).ratio() > 0.85:
                    raise SystemExit(f"{c.text!r} is (nearly) a PERSPECTRUM {split} claim")
    print(f"{len(ours)} claims, none in PERSPECTRUM train/dev")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", type=Path, help="where the index lives (default: indexes/)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--json", type=Path, help="save the answers here")
    ap.add_argument("--judged", type=Path, help="a saved run with judgments: re-print and count")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--set", choices=sorted(SETS), default="default", help="which claims")
    ap.add_argument(
        "--no-argument", action="store_true", help="answer as before the argument model"
    )
    args = ap.parse_args()
    if args.check:
        check()
        return
    if args.judged:
        doc = json.loads(args.judged.read_text())
        counts = show(doc["answers"], doc.get("judged", {}))
        print("\n" + json.dumps(dict(sorted(counts.items())), indent=1))
        return
    runs = answers(args.index, args.k, SETS[args.set], not args.no_argument, args.home)
    if args.json:
        args.json.write_text(json.dumps({"answers": runs, "judged": {}}, indent=1) + "\n")
    show(runs)


if __name__ == "__main__":
    main()
