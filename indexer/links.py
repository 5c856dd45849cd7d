"""Perspective -> evidence links, computed at index time so a search never retrieves evidence.

What backs a perspective does not depend on the claim: on the debate sites PERSPECTRUM was built
from, a perspective's evidence is the paragraph written under it. So each perspective gets its
top evidence paragraphs once, when the pools are indexed, and the engine only looks them up.

Candidates: the perspective's stored dense vector against the evidence pool's dense index, and its
text against the evidence BM25 index, fused with reciprocal rank fusion. Measured on PERSPECTRUM
dev (bench/evidence.py): perspective-only queries beat claim + perspective queries, and the fusion
beats either retriever alone.

Stored in `links.sqlite` beside the pools of a version; copied (not shared) by copy-on-write
updates, like every mutable file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from retriever.fusion import rrf

LINKS = "links.sqlite"
DEPTH = 20  # candidates taken from each retriever before fusion
KEEP = 5  # links stored per perspective
RRF_K = 60  # fusion constant of the stored scores (the engine's evidence stack reads them)


class Links:
    def __init__(self, version: Path, readonly: bool = True):
        self.path = Path(version) / LINKS
        uri = f"file:{self.path}?mode=ro" if readonly else f"file:{self.path}"
        self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        if not readonly:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS links (pid TEXT, rank INTEGER, eid TEXT, score REAL,"
                " cosine REAL, PRIMARY KEY (pid, rank))"
            )

    @classmethod
    def exists(cls, version: Path) -> bool:
        return (Path(version) / LINKS).is_file()

    def get(self, pids: Sequence[str], k: int = KEEP) -> dict[str, list[tuple[str, float, float]]]:
        """pid -> [(evidence id, fused score, cosine)], best first."""
        out: dict[str, list[tuple[str, float, float]]] = {p: [] for p in pids}
        for i in range(0, len(pids), 500):
            chunk = list(pids[i : i + 500])
            q = ",".join("?" * len(chunk))
            for pid, eid, score, cos in self.db.execute(
                f"SELECT pid, eid, score, cosine FROM links WHERE pid IN ({q}) AND rank < ?"
                " ORDER BY pid, rank",
                [*chunk, k],
            ):
                out[pid].append((eid, score, cos))
        return out

    def replace(self, rows: Iterable[tuple[str, list[tuple[str, float, float]]]]) -> None:
        with self.db:
            for pid, links in rows:
                self.db.execute("DELETE FROM links WHERE pid = ?", (pid,))
                self.db.executemany(
                    "INSERT INTO links VALUES (?, ?, ?, ?, ?)",
                    [(pid, r, e, s, c) for r, (e, s, c) in enumerate(links)],
                )

    def drop(self, pids: Sequence[str]) -> None:
        with self.db:
            self.db.executemany("DELETE FROM links WHERE pid = ?", [(p,) for p in pids])

    def clear(self) -> None:
        with self.db:
            self.db.execute("DELETE FROM links")

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(DISTINCT pid) FROM links").fetchone()[0]

    def close(self) -> None:
        self.db.close()


def compute(
    items: Sequence[tuple[str, str]],
    evidence_backends: dict,
    perspective_vectors: np.ndarray | None,
    keep: int = KEEP,
    depth: int = DEPTH,
    progress=None,
) -> list[tuple[str, list[tuple[str, float, float]]]]:
    """Links for `items` [(perspective id, text)] against the evidence pool's backends.

    Uses whichever of `bm25` and `dense` the index has (ColBERT adds query encoding cost per
    perspective for little gain here and is left out).
    """
    dense = evidence_backends.get("dense")
    bm25 = evidence_backends.get("bm25")
    dense_runs: list[list[tuple[str, float]]] = [[] for _ in items]
    cos: list[dict[str, float]] = [{} for _ in items]
    if dense is not None and perspective_vectors is not None and len(items):
        dense_runs = dense.search_vectors(perspective_vectors, depth)
        cos = [dict(r) for r in dense_runs]
    out = []
    for n, (pid, text) in enumerate(items):
        runs = [dense_runs[n]]
        if bm25 is not None:
            runs.append(bm25.search(text, depth))
        fused = rrf([r for r in runs if r], k=RRF_K, limit=keep)
        out.append((pid, [(e, float(s), float(cos[n].get(e, 0.0))) for e, s in fused]))
        if progress:
            progress(1)
    return out
