"""Index versions share the files a write leaves alone (hard links), and a write never changes
the version before it (perspect.core.index.layout, issue 42)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from perspect.core.index.layout import IndexDir
from perspect.indexer.indexer import Indexer, Source
from tests.conftest import NEWS, write_json, write_jsonl


def _files(version: Path) -> dict[str, tuple[int, str]]:
    """relative path -> (inode, sha256) of every file but the lease and lock files (a clone
    leaves those out: each version's readers make their own)."""
    out = {}
    for root, _dirs, files in os.walk(version):
        for f in files:
            p = Path(root) / f
            if f != "LEASE" and not f.endswith(".lock"):
                rel = p.relative_to(version).as_posix()
                out[rel] = (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def test_an_add_shares_the_untouched_pools_and_leaves_the_old_version_as_it_was(
    built, tmp_path, monkeypatch
):
    d = IndexDir(built, "tiny")
    old = d.current()
    before = _files(old)
    # a reader keeps the old version alive while the add is written
    lease = d.lease()
    news = write_jsonl(
        tmp_path / "more.jsonl",
        [{**NEWS[0], "id": "n-new", "text": "Zoos announced new rules for elephants today."}],
    )
    Indexer("tiny", home=built).add([Source("news", news)])
    new = d.current()
    assert new != old
    after = _files(new)
    assert _files(old) == before  # the old version's bytes are untouched
    shared = {k for k in before if k in after and before[k][0] == after[k][0]}
    # every perspective and evidence file is the same inode; the news pool was copied and written
    assert {k for k in before if k.startswith(("perspectives/", "evidence/"))} <= shared
    assert not any(k.startswith("news/") and before[k][1] != after[k][1] for k in shared)
    assert any(k.startswith("news/") and k not in shared for k in after)
    lease.release()

    # perspectives added: their pool (but its write-once tantivy segments) and the links are
    # copied, the evidence stays shared
    lease = d.lease()
    p = write_json(tmp_path / "p.json", [{"pId": 999, "text": "Elephants remember their keepers."}])
    Indexer("tiny", home=built).add([Source("perspectives", p)])
    latest = _files(d.current())
    assert _files(new) == after
    assert all(latest[k][0] == after[k][0] for k in after if k.startswith("evidence/"))
    assert any(latest[k][0] != after[k][0] for k in after if k.startswith("perspectives/"))
    lease.release()


def test_a_delete_copies_only_its_pool(built):
    d = IndexDir(built, "tiny")
    before = _files(d.current())
    Indexer("tiny", home=built).delete("news", [NEWS[0]["id"]])
    after = _files(d.current())
    assert all(after[k][0] == before[k][0] for k in before if k.startswith("perspectives/"))
    assert any(after[k][0] != before[k][0] for k in before if k.startswith("news/"))
