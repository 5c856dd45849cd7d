"""`make models` (perspect.lab.recipe): each step skips itself when its inputs are unchanged."""

from __future__ import annotations

import json

import pytest

from perspect.core.model import bundle
from perspect.lab import recipe

STEP = recipe.Step("pair", "all", "pair", reads=("dense",), profile="quick")


@pytest.mark.slow
def test_a_step_runs_once_and_reruns_when_an_input_changes(tiny_perspectrum, tiny_base, tmp_path):
    root = tmp_path / "models"
    logs: list[str] = []
    first = recipe.make(tiny_perspectrum, root, [STEP], base=tiny_base, log=logs.append)
    assert [o.ran for o in first] == [True]
    entry = bundle.BundleEntry.read(root / "pair")
    assert entry.record["steps"][0]["step"] == "pair" and bundle.verify(entry) == []
    stamp = (root / "pair" / "encoder" / "model.safetensors").stat().st_mtime_ns

    again = recipe.make(tiny_perspectrum, root, [STEP], base=tiny_base, log=logs.append)
    assert [o.ran for o in again] == [False] and again[0].key == first[0].key
    assert (root / "pair" / "encoder" / "model.safetensors").stat().st_mtime_ns == stamp
    assert "pair: up to date" in logs[-1]

    # a changed training file, or a changed entry the step reads, invalidates it
    pool = tiny_perspectrum / "perspective_pool_v1.0.json"
    rows = json.loads(pool.read_text())
    pool.write_text(json.dumps([*rows, {"pId": 999, "text": "A new perspective."}]))
    changed = recipe.make(
        tiny_perspectrum, root, [STEP], base=tiny_base, dry_run=True, log=logs.append
    )
    assert changed[0].key != first[0].key and "would run" in logs[-1]
    pool.write_text(json.dumps(rows))
    (root / "dense").mkdir()
    (root / "dense" / bundle.MANIFEST).write_text("{}")
    changed = recipe.make(
        tiny_perspectrum, root, [STEP], base=tiny_base, dry_run=True, log=logs.append
    )
    assert changed[0].key != first[0].key


def test_unknown_step_is_refused(tiny_perspectrum, tmp_path):
    from perspect.core.errors import PerspectError

    with pytest.raises(PerspectError, match="unknown step 'stance'"):
        recipe.make(tiny_perspectrum, tmp_path, recipe.steps(), only=["stance"])


def test_the_stance_trunk_step_skips_without_vitaminc(tiny_perspectrum, tmp_path):
    step = next(s for s in recipe.steps() if s.name == "stance-trunk")
    logs: list[str] = []
    other = recipe.OtherData(vitaminc=tmp_path / "missing.jsonl")
    done = recipe.make(tiny_perspectrum, tmp_path, [step], other=other, log=logs.append)
    assert not done[0].ran and "no VitaminC file" in logs[0]


def test_the_shipped_recipe_orders_its_steps():
    names = [s.name for s in recipe.steps(stance_rounds=2, direction=False)]
    assert names == [
        "dense",
        "pair",
        "stance-1",
        "stance-2",
        "equivalence",
        "colbert",
        "stance-trunk",
        "relation",
        "argument",
        "calibrate",
        "unclear",
        "verdict",
        "mining",
        "comparator",
    ]
    with_direction = [s.name for s in recipe.steps(stance_rounds=2, direction=True)]
    assert with_direction[with_direction.index("argument") + 1] == "direction"
    assert with_direction[-2:] == ["sides", "comparator"]
    trunk = next(s for s in recipe.steps() if s.name == "stance-trunk")
    relation = next(s for s in recipe.steps() if s.name == "relation")
    calibrate = next(s for s in recipe.steps() if s.name == "calibrate")
    assert trunk.base == relation.base == "all-mpnet-base-v2"
    # the relation model starts from the stance trunk; the decisions are fitted with it
    assert "stance" in relation.reads and "relation" in calibrate.reads
    assert recipe.steps(stance_rounds=2) == recipe.steps(stance_rounds=2, direction=True)
    assert [s.name for s in recipe.steps(colbert=False, comparator=False, direction=False)][
        -4:
    ] == [
        "calibrate",
        "unclear",
        "verdict",
        "mining",
    ]
    full = recipe.steps(colbert=False, comparator=False, direction=True)
    assert full[-1].name == "sides"  # after every decision that reads sides
    direction = next(s for s in full if s.name == "direction")
    assert direction.writes == "argument" and "argument" in full[-1].reads
    # the mining decision is fitted last among the pair model's, with the relation model's heads
    mining = next(s for s in recipe.steps() if s.name == "mining")
    assert mining.writes == "pair" and "relation" in mining.reads


def test_the_direction_step_skips_without_its_data_and_never_trains_twice(
    tiny_perspectrum, tmp_path
):
    """The direction step starts from the argument entry as the argument step leaves it: without
    the direction pairs it skips itself; on an entry whose last step was a direction step (a
    changed direction recipe) it refuses, naming the two steps to redo, and trains nothing."""
    from perspect.core.errors import PerspectError

    step = next(s for s in recipe.steps(direction=True) if s.name == "direction")
    logs: list[str] = []
    missing = recipe.OtherData(direction=tmp_path / "missing")
    done = recipe.make(tiny_perspectrum, tmp_path, [step], other=missing, log=logs.append)
    assert not done[0].ran and "no direction pairs" in logs[0]

    data = tmp_path / "direction"
    data.mkdir()
    for name in ("train.jsonl", "dev.jsonl"):
        (data / name).write_text("")
    full, entry = tmp_path / "trained", tmp_path / "models" / "argument"
    full.mkdir()
    (full / "manifest.json").write_text("{}")
    bundle.pack(full, entry, name="argument", role="argument", base_id="all-mpnet-base-v2",
                record={})  # fmt: skip
    recipe.record_step(entry, "argument", "k1", 1.0)
    recipe.record_step(entry, "direction", "an-older-recipe", 1.0)
    with pytest.raises(PerspectError, match="earlier direction step") as e:
        recipe.make(tiny_perspectrum, tmp_path / "models", [step],
                    other=recipe.OtherData(direction=data), log=logs.append)  # fmt: skip
    assert "STEPS=argument,direction" in e.value.hint
