"""The relation model behind the comparator's interface: news sentence -> claim strengthens,
weakens or neither, by the trunk's ClaimDiff head under cuts fitted for precision.

Why the same interface as perspect.reranker.comparator.Comparator: the news stage asks one
question of whichever model the bundle ships ("does A strengthen or weaken B?"); with the
relation model it reads the trunk (one model behind every such judgment, issue 41) decomposed,
each news sentence's lower layers once per process (kept in a bounded cache: a server sees the
same pool sentences again and again), the claim's once per search.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from perspect.reranker.comparator import Relation

CACHED = 20_000  # sentences whose lower states are kept (about 50 MB at 30 tokens each)


class KeptLower:
    """A news judge over the trunk: each sentence's lower states once per process, the last
    CACHED kept (a server sees the same pool sentences again and again)."""

    def __init__(self, trunk):
        self.trunk = trunk
        self._lower: OrderedDict[str, np.ndarray] = OrderedDict()

    def lower(self, texts: Sequence[str]) -> list[np.ndarray]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._lower]
        if todo:
            self._lower.update(zip(todo, self.trunk.lower(todo), strict=True))
            while len(self._lower) > CACHED:
                self._lower.popitem(last=False)
        for t in texts:
            self._lower.move_to_end(t)
        return [self._lower[t] for t in texts]


class RelationJudge(KeptLower):
    reads_negation = True  # trained with negated claims: the news stage's negation rule applies

    def __init__(self, trunk, cuts: dict[str, Any]):
        super().__init__(trunk)
        self.strengthen_at = float(cuts["strengthen_at"])
        self.weaken_at = float(cuts["weaken_at"])

    @classmethod
    def of(cls, trunk) -> RelationJudge | None:
        """The judge of a trunk with a ClaimDiff head and fitted news cuts, else None."""
        if trunk is None or "claimdiff" not in trunk.heads:
            return None
        cuts = (trunk.manifest.get("decisions") or {}).get("news")
        return cls(trunk, cuts) if cuts else None

    def for_inference(self) -> RelationJudge:
        return self

    def compare(
        self, pairs: Sequence[tuple[str, str]], setting: str = "doc", batch_size: int = 64
    ) -> list[Relation]:
        """The relation of each (A, B) pair: strengthen or weaken where its probability clears
        the fitted cut (the larger margin if both do), else neither. `setting` is accepted for
        the comparator's interface; the cuts were fitted on the document-like mix."""
        if not pairs:
            return []
        a = self.lower([x for x, _ in pairs])
        b = self.lower([y for _, y in pairs])
        p = self.trunk.pairs("claimdiff", a, b, batch_size)  # neither, strengthen, weaken
        out = []
        for row in p:
            pn, ps, pw = (float(v) for v in row)
            over = {r: v - c for r, v, c in (("strengthen", ps, self.strengthen_at),
                                             ("weaken", pw, self.weaken_at)) if v >= c}  # fmt: skip
            rel = max(over, key=over.get) if over else "neither"
            out.append(Relation(ps, pw, pn, rel, ()))
        return out
