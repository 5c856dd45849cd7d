"""Readers' corrections of an index's answers, kept beside its versions and applied to searches.

A reader can say that a perspective is on the other side of a claim, that it is off-topic, or that
two perspectives make the same point. Each correction is stored for the claim it was made on, by
its normalized text (case, spacing and punctuation do not count), and applies to that claim
alone. Why not to paraphrases: the bundle's bi-encoder puts contrary claims as close as
paraphrases ("Zoos should be closed" vs "Zoos should be kept open" .945, vs "Zoos ought to be shut
down" .934; "Voting should be compulsory" vs "... mandatory" .922), and a side corrected for one
claim is the wrong side for its contrary: no cosine cut separates them.

Stored in `<home>/<index>/corrections.sqlite`, outside the versions: an add, delete or rebuild
publishes new versions and keeps the corrections. sqlite's journal makes each correction one
transaction: a process killed mid-write loses at most that correction, never earlier ones.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perspect.core.errors import PerspectError
from perspect.core.types import validate_claim

FILE = "corrections.sqlite"
SIDES = ("support", "oppose", "off-topic")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS corrections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    claim TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL CHECK (kind IN ('side', 'same')),
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    made_at TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS one_per_point ON corrections (claim, kind, a, b);
"""


def normalized(claim: str) -> str:
    """The claim as corrections key it: lower case, words only ("Zoos should be closed!" and
    "zoos  should be closed" are one claim)."""
    return " ".join(re.findall(r"\w+", validate_claim(claim).lower()))


@dataclass(frozen=True)
class Correction:
    """One reader's correction: `kind` "side" (perspective `a` is on side `b`: support, oppose
    or off-topic) or "same" (perspectives `a` and `b` make one point)."""

    claim: str
    kind: str
    a: str
    b: str
    made_at: str = ""
    text: str = ""  # the claim as the reader typed it (training reads it; `claim` is the key)

    def to_json(self) -> dict[str, Any]:
        if self.kind == "side":
            return {"claim": self.claim, "perspective": self.a, "side": self.b, "at": self.made_at}
        return {"claim": self.claim, "same": [self.a, self.b], "at": self.made_at}


@dataclass(frozen=True)
class ClaimCorrections:
    """What the corrections say about one claim's perspectives, as a search applies them."""

    sides: dict[str, str]  # perspective id -> support | oppose | off-topic
    same: frozenset[frozenset[str]]  # pairs of perspective ids that make one point

    def __bool__(self) -> bool:
        return bool(self.sides or self.same)


NONE = ClaimCorrections({}, frozenset())


class Corrections:
    """The corrections store of one index (`root`: the index's folder)."""

    def __init__(self, root: str | Path):
        self.path = Path(root) / FILE

    def _db(self, write: bool = False) -> sqlite3.Connection | None:
        if not write and not self.path.is_file():
            return None
        try:
            con = sqlite3.connect(self.path, timeout=10)
            con.executescript(_SCHEMA) if write else None
        except sqlite3.DatabaseError as e:
            raise PerspectError(
                f"the corrections of this index ({self.path}) are unreadable ({e})",
                hint=f"move {self.path} away to start them afresh",
            ) from None
        return con

    def add(self, c: Correction) -> bool:
        """Store `c` (True), or nothing when the same correction is stored already (False); a
        side correction replaces an earlier side of that perspective for that claim."""
        _check(c)
        key = normalized(c.claim)
        a, b = (c.a, c.b) if c.kind == "side" else tuple(sorted((c.a, c.b)))
        con = self._db(write=True)
        try:
            with con:  # one transaction: all of it or none of it
                if c.kind == "side":
                    con.execute(
                        "DELETE FROM corrections WHERE claim=? AND kind='side' AND a=? AND b!=?",
                        (key, a, b),
                    )
                cur = con.execute(
                    "INSERT OR IGNORE INTO corrections (claim, text, kind, a, b, made_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        validate_claim(c.claim),
                        c.kind,
                        a,
                        b,
                        time.strftime("%Y-%m-%dT%H:%M:%S"),
                    ),
                )
                return cur.rowcount == 1
        finally:
            con.close()

    def remove(self, c: Correction) -> bool:
        """Undo `c`; False when it was not stored."""
        _check(c)
        a, b = (c.a, c.b) if c.kind == "side" else tuple(sorted((c.a, c.b)))
        con = self._db()
        if con is None:
            return False
        try:
            with con:
                cur = con.execute(
                    "DELETE FROM corrections WHERE claim=? AND kind=? AND a=? AND b=?",
                    (normalized(c.claim), c.kind, a, b),
                )
                return cur.rowcount > 0
        finally:
            con.close()

    def all(self) -> list[Correction]:
        con = self._db()
        if con is None:
            return []
        try:
            rows = con.execute(
                "SELECT claim, kind, a, b, made_at, text FROM corrections ORDER BY id"
            ).fetchall()
        except sqlite3.DatabaseError as e:
            raise PerspectError(f"the corrections in {self.path} are unreadable ({e})") from None
        finally:
            con.close()
        return [Correction(*r) for r in rows]

    def for_claim(self, claim: str) -> ClaimCorrections:
        """The corrections made on `claim` (normalized), and only those."""
        con = self._db()
        if con is None:
            return NONE
        try:
            rows = con.execute(
                "SELECT kind, a, b FROM corrections WHERE claim=?", (normalized(claim),)
            ).fetchall()
        except sqlite3.DatabaseError as e:
            raise PerspectError(f"the corrections in {self.path} are unreadable ({e})") from None
        finally:
            con.close()
        sides = {a: b for kind, a, b in rows if kind == "side"}
        same = frozenset(frozenset((a, b)) for kind, a, b in rows if kind == "same")
        return ClaimCorrections(sides, same)


def _check(c: Correction) -> None:
    validate_claim(c.claim)
    if c.kind == "side" and c.b not in SIDES:
        raise PerspectError(f"unknown side {c.b!r}", hint=f"one of: {', '.join(SIDES)}")
    if c.kind == "same" and c.a == c.b:
        raise PerspectError("a perspective is the same point as itself already")
    if c.kind not in ("side", "same"):
        raise PerspectError(f"unknown correction {c.kind!r}", hint="side or same")


def as_json(items: Sequence[Correction]) -> str:
    return json.dumps([c.to_json() for c in items], indent=2)
