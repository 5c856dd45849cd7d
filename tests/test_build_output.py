"""An index build shows Perspect's own progress only: no raw tqdm lines of the Stanford PLAID
code between the rich bars (its collection indexer passes disable=False, past TQDM_DISABLE)."""

from __future__ import annotations

import json
import re

import pytest

from perspect.core.index.config import IndexConfig
from perspect.indexer.indexer import Indexer, Source

# the Stanford code's unlabelled bars ("0it [00:00, ?it/s]"); the CLI mutes the libraries'
# labelled ones (TQDM_DISABLE, HF_HUB_DISABLE_PROGRESS_BARS) before they are imported
RAW_BAR = re.compile(r"(?:^|[\r\n])\d+it \[")
WORDS = "animal law tax school energy nuclear wind health vote court police rights".split()


@pytest.mark.plaid
def test_a_plaid_build_prints_no_raw_progress_bars(tiny_colbert, tmp_path, capfd):
    rows = [
        {"id": f"p{i}", "text": " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(8))}
        for i in range(60)
    ]
    pool = tmp_path / "p.jsonl"
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = IndexConfig(
        ("bm25", "colbert"),
        {"colbert": {"model": str(tiny_colbert), "doc_maxlen": 32, "min_plaid_docs": 40}},
        links=False,
    )
    capfd.readouterr()
    Indexer("raw", home=tmp_path / "home", config=config).build([Source("perspectives", pool)])
    out = capfd.readouterr()
    assert next((tmp_path / "home").rglob("plaid_ids.json"), None) is not None
    assert not RAW_BAR.search(out.err + out.out), (out.err + out.out)[-2000:]
