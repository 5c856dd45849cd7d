"""The argument model's judgments where a search acts on them (issue 55): does a perspective take
a side on the claim at all, and does the cited sentence of a linked paragraph argue for its
perspective, against it, or neither.

Both read stored lower states where the index has them (a perspective's, under the key the
argument model shares with the stance trunk) and compute the others; the judgment of a
(perspective, sentence) pair does not depend on the claim, so it is kept in a process-wide cache
(a service answers the next claim that shows the same perspective without a pass).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from perspect.core.index.links import Link
from perspect.core.index.stance_states import dequantize
from perspect.core.result import Member
from perspect.reranker.argument import NEITHER, ArgumentModel

CACHED = 50_000  # (perspective, sentence) judgments kept per process
SENTENCES_KEPT = 5_000  # sentences whose lower states are kept per process


class Arguing:
    """The argument model bound to one index's stored states (None: that index stores none)."""

    def __init__(self, model: ArgumentModel, searcher):
        self.model, self.searcher = model, searcher
        self.cuts = model.cuts
        self._pairs: OrderedDict[tuple[str, str, str], tuple[float, float]] = OrderedDict()
        self._sentences: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._created = str(model.manifest.get("created"))

    # -- states ---------------------------------------------------------------------------------
    def perspective_states(self, ids: Sequence[str], texts: Sequence[str]) -> list[np.ndarray]:
        stored = {}
        st = self.searcher.stance_states() if self.searcher is not None else None
        if st is not None and st.key == self.model.states_key:
            stored = st.get_many(list(ids))
        todo = [i for i, p in enumerate(ids) if p not in stored]
        made = dict(zip(todo, self.model.lower([texts[i] for i in todo]), strict=True))
        return [made[i] if i in made else dequantize(*stored[ids[i]]) for i in range(len(ids))]

    def sentence_states(self, sentences: Sequence[str]) -> list[np.ndarray]:
        with self._lock:
            todo = [s for s in dict.fromkeys(sentences) if s not in self._sentences]
        made = dict(zip(todo, self.model.lower(todo), strict=True)) if todo else {}
        with self._lock:
            got = {s: made.get(s, self._sentences.get(s)) for s in sentences}
            for s, h in made.items():
                self._sentences[s] = h
            while len(self._sentences) > SENTENCES_KEPT:
                self._sentences.popitem(last=False)
        return [got[s] for s in sentences]

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

    def _key(self, texts: dict[str, str], k: tuple) -> tuple[str, str, str]:
        return (self._created, texts[k[2]], k[3])

    # -- perspective -> cited sentence ------------------------------------------------------------
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
        with self._lock:
            known = {k: self._pairs.get(self._key(perspective_texts, k)) for k in todo}
        need = [k for k in todo if known[k] is None]
        if need:
            pids_needed = list(dict.fromkeys(k[2] for k in need))
            pstates = dict(zip(pids_needed, self.perspective_states(
                pids_needed, [perspective_texts[p] for p in pids_needed]), strict=True))  # fmt: skip
            sstates = self.sentence_states([k[3] for k in need])
            p = self.model.judge([pstates[k[2]] for k in need], sstates)
            with self._lock:
                for k, row in zip(need, p, strict=True):
                    known[k] = (float(row[0]), float(row[1]))
                    self._pairs[self._key(perspective_texts, k)] = known[k]
                while len(self._pairs) > CACHED:
                    self._pairs.popitem(last=False)
        for k in todo:
            pf, pa = known[k]
            out[k[0]][k[1]] = replace(out[k[0]][k[1]], entail=pf, contradict=pa)
        return out
