"""The evidence verdict's and cited reason's cuts refitted on the judged set (issue 71): a
sentence is cited as the reason, and its paragraph shown as backing, where the argument model's
P(for) of (perspective, sentence) reaches `for_at`; a paragraph argues against where P(against)
reaches `against_at`. Both fitted for precision on the judged `ps` items of tune claims (people
read each sentence in its paragraph), reported on report claims beside the shipped cuts.

Why refit: the shipped cuts were fitted on PERSPECTRUM's gold paragraphs, where a linked
paragraph was written for its perspective; a reader sees paragraphs linked to perspectives of
neighbouring debates, and "on the topic" is not "backs it".
"""

from __future__ import annotations

import numpy as np

from perspect.lab.judged import (
    HERE,
    evidence_texts,
    load_claims,
    paragraph_sentences,
    perspective_texts,
    read_jsonl,
)

FOR_PRECISION = 0.85
AGAINST_PRECISION = 0.80


def rows() -> list[dict]:
    split = {c.id: c.split for c in load_claims()}
    items = {r["id"]: r for r in read_jsonl(HERE / "items.jsonl")}
    ptext, etext = perspective_texts(), evidence_texts()
    out = []
    for r in read_jsonl(HERE / "labels.jsonl"):
        if r["q"] != "ps" or not r.get("label"):
            continue
        it = items[r["id"]]
        sents = paragraph_sentences(etext[it["eid"]])
        out.append({"split": split[it["claim"]], "label": r["label"],
                    "a": ptext[it["pid"]], "b": sents[int(it["sent"])]})  # fmt: skip
    return out


def precision_cut(p: np.ndarray, gold: np.ndarray, precision: float, least: int = 10) -> float:
    """The lowest cut whose rows at or above it are `precision` gold (1.01: never)."""
    order = np.argsort(-p, kind="stable")
    prec = np.cumsum(gold[order]) / np.arange(1, len(order) + 1)
    ok = np.nonzero(prec >= precision)[0]
    ok = ok[ok >= least - 1]
    return round(float(p[order][ok.max()]), 4) if len(ok) else 1.01


def at_cut(p: np.ndarray, gold: np.ndarray, cut: float) -> dict:
    kept = p >= cut
    return {"cut": cut, "kept": int(kept.sum()),
            "precision": round(float(gold[kept].mean()), 4) if kept.any() else None,
            "coverage": round(float(kept[gold].mean()), 4) if gold.any() else None}  # fmt: skip


def fit(model, shipped, log=print) -> dict:
    """{for_at, against_at, report}: `model` an ArgumentModel (P(for), P(against), P(neither) of
    text pairs); `shipped` its current ArgumentCuts (the baseline)."""
    data = rows()
    p = model.judge_texts([r["a"] for r in data], [r["b"] for r in data])
    y = np.array([r["label"] for r in data])
    split = np.array([r["split"] for r in data])
    tune, rep = split == "tune", split == "report"
    # a target no cut reaches keeps the shipped cut: a cut at "never" would drop every cited
    # reason, where the judged precision is flat across cuts (bench/RESULTS.md)
    fitted = {"for_at": precision_cut(p[tune, 0], y[tune] == "for", FOR_PRECISION),
              "against_at": precision_cut(p[tune, 1], y[tune] == "against", AGAINST_PRECISION)}  # fmt: skip
    for_at = fitted["for_at"] if fitted["for_at"] <= 1 else shipped.for_at
    against_at = fitted["against_at"] if fitted["against_at"] <= 1 else shipped.against_at
    out = {"for_at": for_at, "against_at": against_at, "fitted": fitted, "rows": {
        s: int((split == s).sum()) for s in ("train", "tune", "report")}}  # fmt: skip
    for name, m in (("tune", tune), ("report", rep)):
        out[name] = {
            "for": at_cut(p[m, 0], y[m] == "for", for_at),
            "against": at_cut(p[m, 1], y[m] == "against", against_at),
            "shipped_for": at_cut(p[m, 0], y[m] == "for", shipped.for_at),
            "shipped_against": at_cut(p[m, 1], y[m] == "against", shipped.against_at),
            "for_shown_against": round(float((y[m][p[m, 0] >= for_at] == "against").mean()), 4)
            if (p[m, 0] >= for_at).any() else None,
        }  # fmt: skip
    log(f"verdict cuts: {out}")
    return out
