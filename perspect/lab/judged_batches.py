"""Judge batch files: each item twice, in two different batches, with the texts a judge reads and
nothing of the model's (docs/judged-set.md). Written outside the repository: the texts are
third-party."""

from __future__ import annotations

import json
from pathlib import Path

from perspect.lab.judged import (
    Claim,
    evidence_texts,
    item_texts,
    make_batches,
    perspective_texts,
)


def write_batches(args, claims: list[Claim], items: list[dict]) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    ledger = out / "batched.json"
    done = set(json.loads(ledger.read_text())) if ledger.exists() else set()
    todo = [it for it in items if it["q"] == args.q and it["id"] not in done]
    if not todo:
        print("nothing to batch")
        return 0
    by_id = {c.id: c for c in claims}
    ptext, etext = perspective_texts(), evidence_texts()
    news = None
    if args.q == "cn":
        from perspect.lab.judged_news import news_sentences_for

        news = news_sentences_for(todo)
    first = len(list(out.glob("batch-*.jsonl")))
    for n, batch in enumerate(make_batches(todo, args.size, args.seed + first)):
        path = out / f"batch-{first + n:03d}-{args.q}-r{batch[0]['rep']}.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for it in batch:
                f.write(json.dumps(item_texts(it, by_id, ptext, etext, news), ensure_ascii=False))
                f.write("\n")
        print(f"{path} ({len(batch)} items)")
    ledger.write_text(json.dumps(sorted(done | {it["id"] for it in todo})))
    return 0
