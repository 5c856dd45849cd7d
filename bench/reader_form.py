"""A blind judging form over saved reader-bench runs (bench/reader.py --json), and its tally.

Issue 55's reading: every cluster of every run judged one by one, without the judge knowing which
run it came from: the side shown right / wrong / takes no side (or off the claim), the cited
reason backs its perspective / argues the opposite / none shown / unrelated, the top evidence
paragraph backs / argues against / irrelevant / none shown.

    python bench/reader_form.py form RUN.json [RUN.json ...] --out FORM.jsonl [--parts N]
        one item per cluster, shuffled, with an opaque id (the key to runs kept in FORM.key.json)
    python bench/reader_form.py tally FORM.key.json JUDGED.jsonl [JUDGED.jsonl ...]
        counts per run, on the clusters judged on the claim (sides, reasons, evidence)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import Counter
from pathlib import Path

SIDE = ("right", "wrong", "no-side", "off-topic")
REASON = ("backs", "opposite", "none", "unrelated")
EVIDENCE = ("backs", "against", "irrelevant", "none")


def form(runs: list[Path], out: Path, parts: int) -> None:
    items, key = [], {}
    for run in runs:
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
    for p in range(parts):
        part = items[p::parts]
        name = out if parts == 1 else out.with_name(f"{out.stem}.{p + 1}{out.suffix}")
        name.write_text("".join(json.dumps(x) + "\n" for x in part))
        print(f"{name}: {len(part)} items")
    out.with_suffix(".key.json").write_text(json.dumps(key, indent=1) + "\n")


def tally(key_file: Path, judged: list[Path]) -> dict:
    key = json.loads(key_file.read_text())
    marks = {}
    for f in judged:
        for line in f.read_text().splitlines():
            if line.strip():
                j = json.loads(line)
                marks[j["id"]] = j
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
        on, sided = max(1, c["on_topic"]), max(1, c["on_topic_sided"])
        reasons = c["reason:backs"] + c["reason:opposite"] + c["reason:unrelated"]
        shown_ev = c["evidence:backs"] + c["evidence:against"] + c["evidence:irrelevant"]
        out[run] = {
            "clusters": c["clusters"],
            "on_topic": c["on_topic"],
            "sides": {
                "shown_on_a_side": c["on_topic_sided"],
                "right": round(c["sided:right"] / sided, 3),
                "wrong": round(c["sided:wrong"] / sided, 3),
                "no_side": round(c["sided:no-side"] / sided, 3),
                "unclear_share_of_on_topic": round(1 - c["on_topic_sided"] / on, 3),
            },
            "reasons": {
                "shown_share": round(reasons / on, 3),
                "backs": round(c["reason:backs"] / max(1, reasons), 3),
                "opposite": round(c["reason:opposite"] / max(1, reasons), 3),
            },
            "top_evidence": {
                "shown": shown_ev,
                "backs": round(c["evidence:backs"] / max(1, shown_ev), 3),
                "against": round(c["evidence:against"] / max(1, shown_ev), 3),
                "irrelevant": round(c["evidence:irrelevant"] / max(1, shown_ev), 3),
                "supports_verdict_right": round(
                    c["supports_right"] / max(1, c["supports_shown"]), 3
                ),
                "supports_verdicts": c["supports_shown"],
            },
            "raw": dict(sorted(c.items())),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("form")
    f.add_argument("runs", type=Path, nargs="+")
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--parts", type=int, default=1)
    t = sub.add_parser("tally")
    t.add_argument("key", type=Path)
    t.add_argument("judged", type=Path, nargs="+")
    a = ap.parse_args()
    if a.cmd == "form":
        form(a.runs, a.out, a.parts)
    else:
        print(json.dumps(tally(a.key, a.judged), indent=1))


if __name__ == "__main__":
    main()
