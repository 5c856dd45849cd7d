"""Arguments with their debates (issue 72): every curated perspective keeps the claim or thesis
it was written for, its side there, its source and licence, as metadata beside its text.

Why: a perspective was written for a known debate on a known side. A debate's dozen labelled
arguments say far more about which way one of them argues on a new claim than one reading of it
alone, and a reader wants to know where an argument comes from ("written against 'Performing
tests on animals must be banned'").

Sources (each row's `source`, `licence`; ../shared/data/README.md has the repositories):
- PERSPECTRUM: the whole perspective pool (its ids kept, so evaluations and evidence links still
  resolve); the perspectives of its *train* claims carry their claim and side. Dev claims are
  where T1-T5 are reported, and test claims are held out: their perspectives stay unlabelled.
- Touché 2023 (ValueEval, IBM-ArgQ conclusions): its train split.
- IBM Claim Stance: its train split.
- Debatepedia (argument headings under a thesis) and idebate (ArguAna: a motion's points), the
  train split of `direction/train.jsonl`; its dev split tunes the direction cuts.

    perspect data fetch debates --from ../shared/data   # -> data/debates/perspectives.jsonl
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from perspect.core.errors import PerspectError

DEST = Path("data") / "debates"
FILE = "perspectives.jsonl"
LICENCES = {
    "perspectrum": "CC BY-SA 4.0",
    "touche23": "CC BY-SA 4.0",
    "ibm_claim_stance": "CC BY-SA 3.0",
    "debatepedia": "no licence stated: research use",
    "idebate": "no licence stated: research use",
}
SIDES = {"SUPPORT": "support", "UNDERMINE": "oppose", "support": "support", "oppose": "oppose",
         "con": "oppose", "pro": "support", "for": "support", "against": "oppose"}  # fmt: skip


def _rows(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def perspectrum_rows(folder: Path) -> Iterator[dict]:
    """The whole pool; the perspectives of train claims with their claim and side."""
    pool = json.loads((folder / "perspective_pool_v1.0.json").read_text(encoding="utf-8"))
    split = json.loads((folder / "dataset_split_v1.0.json").read_text(encoding="utf-8"))
    claims = json.loads((folder / "perspectrum_with_answers_v1.0.json").read_text("utf-8"))
    debate: dict[int, tuple[str, str, int]] = {}
    for c in claims:
        if split.get(str(c["cId"])) != "train":
            continue
        for cl in c["perspectives"]:
            for pid in cl["pids"]:
                debate.setdefault(int(pid), (c["text"], SIDES[cl["stance_label_3"]], c["cId"]))
    for p in pool:
        row = {"id": str(p["pId"]), "text": p["text"], "source": "perspectrum",
               "licence": LICENCES["perspectrum"]}  # fmt: skip
        if int(p["pId"]) in debate:
            text, side, cid = debate[int(p["pId"])]
            row.update(debate=text, side=side, debate_id=f"perspectrum:{cid}")
        yield row


def argument_rows(folder: Path) -> Iterator[dict]:
    """Touché 2023 and IBM Claim Stance, train splits."""
    for name, prefix in (("touche23_stance", "touche23"), ("ibm_claim_stance", "ibm_claim_stance")):
        path = folder / f"{name}.jsonl"
        if not path.is_file():
            continue
        for r in _rows(path):
            if r.get("split") != "train" or r.get("stance") not in SIDES:
                continue
            yield {"id": f"{prefix}:{r['id']}", "text": r["text"], "source": prefix,
                   "licence": LICENCES[prefix], "debate": r["claim"],
                   "side": SIDES[r["stance"]], "debate_id": f"{prefix}:{r['claim']}"}  # fmt: skip


def direction_rows(folder: Path) -> Iterator[dict]:
    """Debatepedia's argument headings and idebate's points, train split."""
    path = folder / "train.jsonl"
    if not path.is_file():
        return
    levels = {"argument-argument": "debatepedia", "thesis-point": "idebate"}
    for r in _rows(path):
        source = levels.get(r.get("level"))
        if source is None or r.get("label") not in ("for", "against"):
            continue
        yield {"id": f"{source}:{r['id']}", "text": r["b"], "source": source,
               "licence": LICENCES[source], "debate": r["a"], "side": SIDES[r["label"]],
               "debate_id": f"{source}:{r['debate']}:{r['a'][:80]}"}  # fmt: skip


def build(shared: Path, perspectrum: Path, dest: Path = DEST) -> tuple[Path, dict]:
    """Write every source's rows to `dest/perspectives.jsonl` (atomically); a text already in
    the file (the same words, case aside) is kept once, its first debate kept. Returns the file
    and the counts per source."""
    if not (perspectrum / "perspective_pool_v1.0.json").is_file():
        raise PerspectError(f"no PERSPECTRUM pool in {perspectrum}",
                            hint="perspect data fetch perspectrum")  # fmt: skip
    dest.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    counts: Counter = Counter()
    debates: set[str] = set()
    tmp = dest / f".{FILE}.part"
    with tmp.open("w", encoding="utf-8") as f:
        sources = (perspectrum_rows(perspectrum), argument_rows(shared / "argument"),
                   direction_rows(shared / "direction"))  # fmt: skip
        for rows in sources:
            for r in rows:
                key = " ".join(r["text"].casefold().split())
                if not key or (key in seen and r["source"] != "perspectrum"):
                    continue
                seen.add(key)
                counts[r["source"]] += 1
                if "debate_id" in r:
                    debates.add(r["debate_id"])
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, dest / FILE)
    summary = {"items": sum(counts.values()), "by_source": dict(counts), "debates": len(debates)}
    (dest / "MANIFEST.json").write_text(json.dumps(summary, indent=1) + "\n")
    return dest / FILE, summary
