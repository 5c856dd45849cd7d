"""The stored perspective -> evidence links of an index version (`links.sqlite`): the format.

Computed at index time by perspect.indexer.links; read by the searcher. Copied (not shared) by
copy-on-write updates, like every mutable file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

LINKS = "links.sqlite"
DEPTH = 20  # candidates taken from each retriever before fusion
KEEP = 5  # links stored per perspective
RRF_K = 60  # fusion constant of the stored scores (the engine's evidence stack reads them)
WHY_COLUMNS = ("why_start", "why_end", "why_cos")
# the relation model's reading of the cited sentence against the perspective (NULL: not judged)
JUDGED_COLUMNS = ("why_entail", "why_contra")
JUDGED = 3  # links per perspective whose sentences the relation model reads at index time


@dataclass(frozen=True)
class Link:
    """A perspective's link to an evidence paragraph: what the evidence stack reads.

    `rrf` and `cosine` are stored at index time; `rmargin` (how much closer the paragraph is to
    this perspective than to any perspective outside its cluster) depends on the pool and the
    cluster, so the engine computes it per search (0 until then, or without dense vectors).
    `why` is the [start, end) of the paragraph's sentence closest to the perspective and
    `why_cosine` its cosine, stored at index time so a search cites a sentence without encoding
    one (None: an index linked before they were stored, or without dense vectors)."""

    evidence_id: str
    rrf: float
    cosine: float
    rmargin: float = 0.0
    why: tuple[int, int] | None = None
    why_cosine: float = 0.0
    # P(the cited sentence entails / contradicts the perspective) by the relation model's
    # inference head (perspect.indexer.links.with_relations); None: not judged
    entail: float | None = None
    contradict: float | None = None


class Links:
    def __init__(self, version: Path, readonly: bool = True):
        self.path = Path(version) / LINKS
        uri = f"file:{self.path}?mode=ro" if readonly else f"file:{self.path}"
        self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        if not readonly:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS links (pid TEXT, rank INTEGER, eid TEXT, score REAL,"
                " cosine REAL, why_start INTEGER, why_end INTEGER, why_cos REAL, why_entail REAL,"
                " why_contra REAL,"
                " PRIMARY KEY (pid, rank))"
            )
            with self.db:  # a table written before the cited sentences (or judgments) were stored
                for col in [c for c in (*WHY_COLUMNS, *JUDGED_COLUMNS) if c not in self._columns()]:
                    kind = "INTEGER" if col in ("why_start", "why_end") else "REAL"
                    self.db.execute(f"ALTER TABLE links ADD COLUMN {col} {kind}")
        self.has_why = set(WHY_COLUMNS) <= self._columns()
        self.has_judged = set(JUDGED_COLUMNS) <= self._columns()

    def _columns(self) -> set[str]:
        return {r[1] for r in self.db.execute("PRAGMA table_info(links)")}

    @classmethod
    def exists(cls, version: Path) -> bool:
        return (Path(version) / LINKS).is_file()

    def get(self, pids: Sequence[str], k: int = KEEP) -> dict[str, list[Link]]:
        """pid -> its links, best first."""
        out: dict[str, list[Link]] = {p: [] for p in pids}
        cols = ", ".join(WHY_COLUMNS) if self.has_why else "NULL, NULL, NULL"
        cols += ", " + (", ".join(JUDGED_COLUMNS) if self.has_judged else "NULL, NULL")
        for i in range(0, len(pids), 500):
            chunk = list(pids[i : i + 500])
            q = ",".join("?" * len(chunk))
            for pid, eid, score, cos, ws, we, wc, je, jc in self.db.execute(
                f"SELECT pid, eid, score, cosine, {cols} FROM links WHERE pid IN ({q})"
                " AND rank < ? ORDER BY pid, rank",
                [*chunk, k],
            ):
                why = (int(ws), int(we)) if ws is not None and we is not None else None
                link = Link(eid, score, cos, why=why, why_cosine=float(wc or 0.0))
                out[pid].append(replace(link, entail=je, contradict=jc))
        return out

    def judge(self, rows: Iterable[tuple[str, str, float, float]]) -> None:
        """Store (pid, evidence id, P(entail), P(contradict)) of links' cited sentences."""
        with self.db:
            self.db.executemany(
                "UPDATE links SET why_entail = ?, why_contra = ? WHERE pid = ? AND eid = ?",
                [(e, c, pid, eid) for pid, eid, e, c in rows],
            )

    def replace(self, rows: Iterable[tuple[str, list[Link]]]) -> None:
        with self.db:
            for pid, links in rows:
                self.db.execute("DELETE FROM links WHERE pid = ?", (pid,))
                self.db.executemany(
                    "INSERT INTO links (pid, rank, eid, score, cosine, why_start, why_end,"
                    " why_cos, why_entail, why_contra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            pid,
                            r,
                            x.evidence_id,
                            x.rrf,
                            x.cosine,
                            *(x.why or (None, None)),
                            x.why_cosine if x.why else None,
                            x.entail,
                            x.contradict,
                        )
                        for r, x in enumerate(links)
                    ],
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
