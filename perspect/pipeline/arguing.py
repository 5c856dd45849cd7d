"""The argument model's judgments where a search acts on them (issue 55): does a perspective take
a side on the claim at all, and does the cited sentence of a linked paragraph argue for its
perspective, against it, or neither.

Both read lower states the one way a search does (pipeline.lower: paid once, kept with the
index). The judgment of a
(perspective, sentence) pair does not depend on the claim: it is computed the first time a search
shows the pair and kept with the index (`JUDGMENTS`, keyed by the model and both texts, so adds
and deletes never make one stale), and in memory for this process. Why not all at build time:
every perspective's linked sentences are tens of thousands of pairs, over ten minutes of this
machine's two cores for the demo pools, for judgments most searches never show.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from perspect.core.index.links import Link
from perspect.core.result import Member
from perspect.pipeline.lower import LowerStates
from perspect.reranker.argument import NEITHER, ArgumentModel

CACHED = 50_000  # (perspective, sentence) judgments kept per process
JUDGMENTS = "argument_judgments.sqlite"  # in the index's folder, beside its versions


class Arguing:
    """The argument model bound to one index's stored states (None: that index stores none)."""

    def __init__(self, model: ArgumentModel, searcher, lower: LowerStates | None = None):
        """`lower`: the lower states the search reads already (the stance trunk's), where they
        are this model's too (the same key); else its own."""
        self.model, self.searcher = model, searcher
        self.cuts = model.cuts
        self._pairs: OrderedDict[tuple[str, str, str], tuple[float, float]] = OrderedDict()
        shared = lower is not None and lower.key == model.states_key
        self.lower = lower if shared else LowerStates(model, searcher)
        self._lock = threading.Lock()
        self._created = str(model.manifest.get("created"))
        root = getattr(getattr(searcher, "dir", None), "root", None)
        self._db = None if root is None else root / JUDGMENTS

    # -- judgments kept with the index ----------------------------------------------------------
    def _stored(self, keys: list[str]) -> dict[str, tuple[float, float]]:
        if self._db is None or not self._db.is_file() or not keys:
            return {}
        try:
            with sqlite3.connect(f"file:{self._db}?mode=ro", uri=True, timeout=1) as db:
                got = {}
                for s in range(0, len(keys), 500):
                    part = keys[s : s + 500]
                    q = f"SELECT k, pf, pa FROM j WHERE k IN ({','.join('?' * len(part))})"
                    got.update({k: (pf, pa) for k, pf, pa in db.execute(q, part)})
                return got
        except sqlite3.Error:
            return {}  # unreadable: computed again (and the index itself is untouched)

    def _keep(self, rows: list[tuple[str, float, float]]) -> None:
        if self._db is None or not rows:
            return
        try:
            with sqlite3.connect(self._db, timeout=2) as db:
                db.execute("CREATE TABLE IF NOT EXISTS j (k TEXT PRIMARY KEY, pf REAL, pa REAL)")
                db.executemany("INSERT OR REPLACE INTO j VALUES (?, ?, ?)", rows)
        except (sqlite3.Error, OSError):
            pass  # a read-only or busy index: kept in memory only

    # -- states ---------------------------------------------------------------------------------
    def perspective_states(self, ids: Sequence[str], texts: Sequence[str]) -> list[np.ndarray]:
        return self.lower(texts, ids)

    def sentence_states(self, sentences: Sequence[str], keep: bool = True) -> list[np.ndarray]:
        return self.lower(sentences, keep=keep)

    # -- claim -> perspective ---------------------------------------------------------------------
    def neither(self, claim_states: np.ndarray, members: Sequence[Member]) -> np.ndarray:
        """P(neither) of each member for the claim (does it take a side on it at all)."""
        if not members:
            return np.zeros(0)
        states = self.perspective_states([m.id for m in members], [m.text for m in members])
        return self.model.judge([claim_states] * len(members), states)[:, NEITHER]

    def sided(self, claim_states: np.ndarray, members: Sequence[Member]):
        """(members that take a side, members that take none): a member whose P(neither) reaches
        the fitted cut leaves the sides; one a reader corrected, or a mined one (its own
        decision), stays."""
        if self.cuts is None or not members:
            return list(members), []
        judged = [m for m in members if not m.corrected and not m.mined]
        p = dict(zip((m.id for m in judged), self.neither(claim_states, judged), strict=True))
        keep = [m for m in members if p.get(m.id, 0.0) < self.cuts.neither_at]
        out = [m for m in members if p.get(m.id, 0.0) >= self.cuts.neither_at]
        return keep, out

    def _key(self, perspective: str, sentence: str) -> tuple[str, str, str]:
        return (self._created, perspective, sentence)

    def _digest(self, key: tuple[str, str, str]) -> str:
        return hashlib.sha1("\x00".join(key).encode()).hexdigest()

    # -- perspective -> sentence ------------------------------------------------------------------
    def known(
        self, perspective_texts: dict[str, str], pairs: Sequence[tuple[str, str]]
    ) -> list[bool]:
        """Whether each (perspective id, sentence) pair is judged already (by this process, or
        kept with the index): judging it again costs nothing."""
        keys = [self._key(perspective_texts[p], s) for p, s in pairs]
        got = self._recall(keys)
        return [got[k] is not None for k in keys]

    def _recall(self, keys: Sequence[tuple[str, str, str]]) -> dict:
        """Each key's judgment from memory, else from the index (then remembered, so that
        `judge_pairs` after `known` reads nothing again), else None."""
        with self._lock:
            got = {k: self._pairs.get(k) for k in keys}
        ask = {self._digest(k): k for k in keys if got[k] is None}
        read = {ask[d]: v for d, v in self._stored(list(ask)).items()}
        self._remember(read.items())
        got.update(read)
        return got

    def _remember(self, items) -> None:
        """Keep (key, judgment) pairs in memory, the oldest dropped past CACHED."""
        with self._lock:
            for k, v in items:
                self._pairs[k] = v
            while len(self._pairs) > CACHED:
                self._pairs.popitem(last=False)

    def judge_pairs(
        self,
        perspective_texts: dict[str, str],
        pairs: Sequence[tuple[str, str]],
        states: dict[str, np.ndarray] | None = None,
        idle: bool = False,
    ) -> list[tuple[float, float]]:
        """P(for), P(against) of each (perspective id, sentence) pair: remembered by this process,
        else kept with the index (`JUDGMENTS`), else judged now and kept. `states`: sentences'
        lower states the caller has (stored with the documents), used before computing any.
        `idle` (the idle fill): the judgments are kept with the index only, and the sentences'
        lower states nowhere."""
        keys = [self._key(perspective_texts[p], s) for p, s in pairs]
        known = self._recall(keys)
        need = list(dict.fromkeys((p, s) for (p, s), k in zip(pairs, keys, strict=True)
                                  if known[k] is None))  # fmt: skip
        if need:
            pids = list(dict.fromkeys(p for p, _ in need))
            pstates = dict(zip(pids, self.perspective_states(
                pids, [perspective_texts[p] for p in pids]), strict=True))  # fmt: skip
            have = states or {}
            computed = self.sentence_states([s for _, s in need if s not in have], not idle)
            sstates = dict(zip([s for _, s in need if s not in have], computed, strict=True))
            sstates.update({s: have[s] for _, s in need if s in have})
            p = self.model.judge([pstates[q] for q, _ in need], [sstates[s] for _, s in need])
            fresh = {}
            for (q, s), row in zip(need, p, strict=True):
                fresh[self._key(perspective_texts[q], s)] = (float(row[0]), float(row[1]))
            known.update(fresh)
            if not idle:
                self._remember(fresh.items())
            self._keep([(self._digest(k), *v) for k, v in fresh.items()])
        return [known[k] for k in keys]

    def judge_links(
        self,
        pids: Sequence[str | None],
        perspective_texts: dict[str, str],
        chosen: Sequence[Sequence[Link]],
        paragraphs: dict,
    ) -> list[list[Link]]:
        """Each group's links with P(for) / P(against) of its cited sentence for the group's
        perspective (`pids[g]`: whose links they are) in the slots the verdicts read (`entail`,
        `contradict`)."""
        todo: list[tuple[int, int, str, str]] = []
        for g, (pid, links) in enumerate(zip(pids, chosen, strict=True)):
            if pid is None or pid not in perspective_texts:
                continue
            for i, x in enumerate(links):
                if x.why and x.why[1] > x.why[0] and x.evidence_id in paragraphs:
                    sentence = paragraphs[x.evidence_id].text[x.why[0] : x.why[1]]
                    todo.append((g, i, pid, sentence))
        out = [list(c) for c in chosen]
        if not todo:
            return out
        got = self.judge_pairs(perspective_texts, [(k[2], k[3]) for k in todo])
        for k, (pf, pa) in zip(todo, got, strict=True):
            out[k[0]][k[1]] = replace(out[k[0]][k[1]], entail=pf, contradict=pa)
        return out
