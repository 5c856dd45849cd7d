"""Readers' corrections: stored per index, crash-safe, applied to the claim they were made on."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from perspect import Perspect
from perspect.core.corrections import Correction, Corrections
from perspect.core.errors import PerspectError
from tests.conftest import run_cli

CLAIM = "Animals in zoos feel pain"  # BM25 finds perspectives 1 and 2 of the tiny pools
OTHER = "School uniforms should be compulsory"


@pytest.fixture
def index(tiny_index, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(tiny_index, home)
    return home


def _view(res) -> dict:
    """What a reader sees of an answer: each cluster's side and members, with the marks."""
    return {
        "clusters": [
            (c.stance, [(m.id, m.corrected, round(m.support, 4)) for m in c.members])
            for c in res.clusters
        ],
        "related": [m.id for m in res.related],
    }


def _side_of(res, pid: str) -> tuple[str, bool] | None:
    for c in res.clusters:
        for m in c.members:
            if m.id == pid:
                return c.stance, m.corrected
    return None


def test_the_store_keeps_replaces_and_undoes(tmp_path):
    s = Corrections(tmp_path)
    assert s.all() == [] and not s.for_claim(CLAIM)
    assert s.add(Correction(CLAIM, "side", "p1", "oppose"))
    assert not s.add(Correction(CLAIM.upper() + "  ", "side", "p1", "oppose"))  # same claim
    assert s.add(Correction(CLAIM, "side", "p1", "support"))  # replaces the earlier side
    assert s.add(Correction(CLAIM, "same", "p5", "p3"))
    got = s.for_claim(CLAIM)
    assert got.sides == {"p1": "support"} and got.same == {frozenset(("p3", "p5"))}
    assert not s.for_claim(OTHER)
    assert s.remove(Correction(CLAIM, "same", "p3", "p5")) and not s.for_claim(CLAIM).same
    assert not s.remove(Correction(CLAIM, "same", "p3", "p5"))
    assert [c.to_json()["side"] for c in s.all()] == ["support"]
    with pytest.raises(PerspectError, match="unknown side"):
        s.add(Correction(CLAIM, "side", "p1", "maybe"))
    with pytest.raises(PerspectError):
        s.add(Correction("   ", "side", "p1", "oppose"))


def test_only_that_claim_gets_it_not_a_paraphrase_or_a_contrary_claim(tmp_path):
    s = Corrections(tmp_path)
    s.add(Correction("Zoos should be closed", "side", "p1", "oppose"))
    assert s.for_claim("zoos   should be CLOSED!").sides == {"p1": "oppose"}
    assert not s.for_claim("Zoos should be kept open")
    assert not s.for_claim("Zoos ought to be shut down")


def test_a_correction_changes_that_claims_answer_and_no_other(index, tiny_pair_model):
    with Perspect.open("tiny", home=index, model=tiny_pair_model) as p:
        before, other = p.search(CLAIM), p.search(OTHER)
        assert {m.id for c in before.clusters for m in c.members} == {"1", "2"}
        assert len(before.clusters) == 2 and other.clusters
        side, corrected = _side_of(before, "1")
        assert not corrected
        flipped = "oppose" if side == "support" else "support"
        assert p.correct(CLAIM, "1", flipped)
        after = p.search(CLAIM)
        assert _side_of(after, "1") == (flipped, True)
        doc = json.loads(json.dumps(after.to_json()))
        marked = [m for c in doc["clusters"] for m in c["members"] if m["id"] == "1"]
        assert marked[0]["corrected"] is True
        assert _view(p.search(OTHER)) == _view(other)  # another claim: unchanged
        assert p.correct(CLAIM, "2", "off-topic")
        assert _side_of(p.search(CLAIM), "2") is None
        assert p.correct(CLAIM, "2", "off-topic", undo=True)
        assert p.correct(CLAIM, same=("1", "2"))
        res = p.search(CLAIM)
        assert len(res.clusters) == 1 and {m.id for m in res.clusters[0].members} == {"1", "2"}
        assert all(m.corrected for m in res.clusters[0].members)
        assert _view(p.search(OTHER)) == _view(other)
        for undo in (("1", flipped, None), (None, None, ("1", "2"))):
            assert p.correct(CLAIM, *undo, undo=True)
        assert _view(p.search(CLAIM)) == _view(before)
        assert _view(p.search(OTHER)) == _view(other)


def test_corrections_survive_writes_to_the_index(index, tiny_pair_model, tmp_path):
    from tests.conftest import write_json

    with Perspect.open("tiny", home=index, model=tiny_pair_model) as p:
        side, _ = _side_of(p.search(CLAIM), "1")
        flipped = "oppose" if side == "support" else "support"
        p.correct(CLAIM, "1", flipped)
    more = write_json(tmp_path / "more.json", [{"pId": 7, "text": "Pets are family members."}])
    run_cli("index", "add", "--name", "tiny", "--perspectives", str(more), "--home", str(index))
    run_cli("index", "delete", "--name", "tiny", "--pool", "perspectives", "--ids", "6",
            "--home", str(index))  # fmt: skip
    with Perspect.open("tiny", home=index, model=tiny_pair_model) as p:
        assert _side_of(p.search(CLAIM), "1") == (flipped, True)
        assert len(p.corrections()) == 1


def test_bad_corrections_are_one_line_and_store_nothing(index):
    home = str(index)
    for args, says in (
        (["correct", CLAIM, "--index", "tiny", "--perspective", "99", "--side", "oppose"],
         "no perspective '99'"),
        (["correct", CLAIM, "--index", "nosuch", "--perspective", "1", "--side", "oppose"],
         "nosuch"),
        (["correct", "   ", "--index", "tiny", "--perspective", "1", "--side", "oppose"],
         "claim"),
        (["correct", CLAIM, "--index", "tiny", "--perspective", "1"], "side"),
        (["correct", CLAIM, "--index", "tiny", "--same", "1", "1"], "itself"),
    ):  # fmt: skip
        r = run_cli(*args, "--home", home, ok=False)
        assert r.returncode == 2, (args, r.stderr)
        assert says in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run_cli("correct", CLAIM, "--index", "tiny", "--perspective", "1", "--side", "maybe",
                "--home", home, ok=False)  # fmt: skip
    assert r.returncode == 2 and "invalid choice" in r.stderr
    listed = run_cli("corrections", "--index", "tiny", "--json", "--home", home)
    assert json.loads(listed.stdout) == []


WRITER = """
import sys
from perspect.core.corrections import Correction, Corrections
s = Corrections(sys.argv[1])
i = 0
while True:
    s.add(Correction("claim number %d" % i, "side", "p1", "oppose"))
    i += 1
"""


def test_kill_9_mid_write_loses_at_most_that_correction(tmp_path):
    s = Corrections(tmp_path)
    s.add(Correction(CLAIM, "side", "p1", "oppose"))
    s.add(Correction(CLAIM, "same", "p3", "p5"))
    for _ in range(3):
        p = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)])
        time.sleep(1.5 + np.random.default_rng().uniform(0, 1))
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        got = s.all()
        assert got[:2] == [
            Correction(CLAIM.lower(), "side", "p1", "oppose", got[0].made_at),
            Correction(CLAIM.lower(), "same", "p3", "p5", got[1].made_at),
        ]
        numbers = [int(c.claim.split()[-1]) for c in got[2:]]
        assert numbers == sorted(numbers) and len(got) > 2
        con = sqlite3.connect(tmp_path / "corrections.sqlite")
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
