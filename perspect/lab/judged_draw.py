"""The judged set's second wave, drawn from a built index (`make demo`'s `default`): each claim's
perspectives from every retriever before any cut (dense, ColBERT, fused), and for its first
fused perspectives the sentences of their first linked paragraph (question `ps`: the sentence the
build cites, and one it does not)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from perspect.lab.judged import (
    HERE,
    Claim,
    evidence_texts,
    load_claims,
    merge_items,
    read_jsonl,
)

RETRIEVERS = ("dense", "colbert", "hybrid")


def cited_and_other(text: str, why: tuple[int, int]) -> tuple[int, int | None]:
    """The index (in `paragraph_sentences`) of the sentence the build cites (the one holding the
    start of its `why` span) and of another sentence (the first that is not it), or None."""
    from perspect.indexer.news import sentence_spans

    spans = sentence_spans(text)
    cited = next((i for i, (a, b) in enumerate(spans) if a <= why[0] < b), 0)
    other = next((i for i in range(len(spans)) if i != cited), None)
    return cited, other


def draw_index(claims: Sequence[Claim], index: str, k: int, ps_perspectives: int) -> list[dict]:
    from perspect.retriever.searcher import Searcher

    etext = evidence_texts()
    rows: list[dict] = []
    searcher = Searcher(index)
    links = searcher.links()
    for n, c in enumerate(claims):
        fused: list[str] = []
        for r in RETRIEVERS:
            for h in searcher.search(c.text, pool="perspectives", k=k, retriever=r).hits:
                rows.append(
                    {
                        "id": f"cp:{c.id}:{h.id}",
                        "q": "cp",
                        "claim": c.id,
                        "pid": h.id,
                        "found": [f"{r}@{h.rank}"],
                    }
                )
                if r == "hybrid":
                    fused.append(h.id)
        if links is None:
            continue
        got = links.get(fused[:ps_perspectives])
        for pid in fused[:ps_perspectives]:
            first = (got.get(pid) or [None])[0]
            if first is None or first.evidence_id not in etext or first.why is None:
                continue
            cited, other = cited_and_other(etext[first.evidence_id], first.why)
            for i, tag in ((cited, "cited"), (other, "other")):
                if i is None:
                    continue
                rows.append(
                    {
                        "id": f"ps:{pid}:{first.evidence_id}:{i}",
                        "q": "ps",
                        "claim": c.id,
                        "pid": pid,
                        "eid": first.evidence_id,
                        "sent": i,
                        "found": [f"link1-{tag}"],
                    }
                )
        if n % 50 == 0:
            print(f"{n}/{len(claims)} claims", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--index", default="default")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--ps-perspectives", type=int, default=2)
    args = ap.parse_args()
    path = HERE / "items.jsonl"
    items = merge_items(
        read_jsonl(path), draw_index(load_claims(), args.index, args.k, args.ps_perspectives)
    )
    from perspect.lab.judged import _write_jsonl

    print(f"{_write_jsonl(path, items)} items -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
