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
from perspect.core.errors import PerspectError
from perspect.core.index.corrections import Correction, Corrections
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
from perspect.core.index.corrections import Correction, Corrections
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
        assert [(c.claim, c.kind, c.a, c.b, c.text) for c in got[:2]] == [
            (CLAIM.lower(), "side", "p1", "oppose", CLAIM),
            (CLAIM.lower(), "same", "p3", "p5", CLAIM),
        ]
        numbers = [int(c.claim.split()[-1]) for c in got[2:]]
        assert numbers == sorted(numbers) and len(got) > 2
        con = sqlite3.connect(tmp_path / "corrections.sqlite")
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()


def test_corrections_become_training_pairs():
    from perspect.lab.train.pair_data import Corrected, correction_examples

    rows = [
        Corrected("Zoos should be closed", "side", "Zoos save species.", "oppose"),
        Corrected("Zoos should be closed", "side", "Pandas are cute.", "off-topic"),
        Corrected("Zoos should be closed", "same", "Zoos are cruel.", "Zoos are prisons."),
    ]
    got = correction_examples(rows, ("relevance", "stance", "equivalence"))
    assert [(e.label, e.b) for e in got["stance"]] == [(0.0, "Zoos save species.")]
    assert sorted((e.b, e.label) for e in got["relevance"]) == [
        ("Pandas are cute.", 0.0),
        ("Zoos save species.", 1.0),
    ]
    assert len(got["equivalence"]) == 2 and {e.label for e in got["equivalence"]} == {1.0}
    assert correction_examples(rows, ("stance",)).keys() == {"stance"}


def test_make_models_keys_the_pair_steps_on_the_corrections(tiny_perspectrum, tmp_path):
    from perspect.lab import recipe
    from perspect.lab.train.pair_data import Corrected

    steps = [
        recipe.Step("pair", "all", "pair", profile="quick"),
        recipe.Step("equivalence", "equivalence-ce", "equivalence"),
    ]
    plain = recipe.make(tiny_perspectrum, tmp_path, steps, dry_run=True, log=lambda m: None)
    fix = recipe.OtherData(corrections=(Corrected("c", "side", "a text", "support"),))
    with_fix = recipe.make(
        tiny_perspectrum, tmp_path, steps, dry_run=True, log=lambda m: None, other=fix
    )
    assert with_fix[0].key != plain[0].key  # the pair model trains on them: a new key
    assert with_fix[1].key == plain[1].key  # the other steps do not read them


def test_an_index_corrections_are_read_as_texts(index):
    from perspect.lab.train.pair_data import index_corrections

    with Perspect.open("tiny", home=index) as p:
        p.correct(CLAIM + "!", "1", "oppose")
        p.correct(CLAIM, same=("1", "2"))
    rows = index_corrections("tiny", index)
    assert rows[0].claim == CLAIM + "!" and rows[0].b == "oppose"
    assert rows[0].a.startswith("Animals feel pain")
    assert rows[1].kind == "same" and rows[1].b.startswith("Zoos keep")


@pytest.mark.slow
def test_the_trained_pair_model_records_the_corrections_it_used(
    tiny_perspectrum, tiny_base, tmp_path
):
    from perspect.lab import recipe
    from perspect.lab.train.pair_data import Corrected

    step = recipe.Step("pair", "all", "pair", profile="quick")
    fix = recipe.OtherData(
        corrections=(
            Corrected("Zoos should be closed", "side", "Zoos save species.", "oppose"),
            Corrected("Zoos should be closed", "same", "Zoos are cruel.", "Zoos are prisons."),
        )
    )
    recipe.make(tiny_perspectrum, tmp_path, [step], base=tiny_base, other=fix, log=lambda m: None)
    manifest = json.loads((tmp_path / "pair" / "manifest.json").read_text())
    assert manifest["corrections_used"] == {"relevance": 1, "stance": 1, "equivalence": 2}
