"""`make models` (perspect.lab.recipe): each step skips itself when its inputs are unchanged."""

from __future__ import annotations

import json

import pytest

from perspect.core.model import bundle, tensor_store
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
    at = with_direction.index("argument")
    assert with_direction[at + 1 : at + 3] == ["direction", "heads"]
    # the news stack (issue 73) after the last step that reads the argument entry's decisions
    assert with_direction[-4:] == ["sides", "mining", "news", "comparator"]
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
    # after every decision they read; the news stack last, so that writing it stales nothing
    assert [s.name for s in full[-3:]] == ["sides", "mining", "news"]
    direction = next(s for s in full if s.name == "direction")
    assert direction.writes == "argument" and "argument" in full[-3].reads
    assert full[-1].writes == "pair" and full[-1].reads == ("argument",)
    # the mining decision is fitted last among the pair model's, with the heads of the trunk the
    # engine reads: the argument model's where it answers everything, else the relation model's
    mining = next(s for s in recipe.steps() if s.name == "mining")
    assert mining.writes == "pair" and "argument" in mining.reads
    assert "relation" in next(s for s in recipe.steps(direction=False) if s.name == "mining").reads
    # the trunks it descends from are intermediate stages: run where a step reading them must,
    # kept outside the repository; without direction, the relation model answers and ships
    ships = {s.name: s.ships for s in recipe.steps()}
    assert not ships["stance-trunk"] and not ships["relation"] and ships["argument"]
    assert next(s for s in recipe.steps(direction=False) if s.name == "relation").ships


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


def test_an_intermediate_stage_runs_only_where_a_step_reading_it_must(
    tiny_perspectrum, tiny_base, tmp_path, monkeypatch
):
    """A stage another entry trains from (`ships=False`: the trunks the argument model descends
    from) lives in the cache, not the bundle; a step reading it depends on its inputs key, not its
    files, so a fresh clone without it is up to date, and the stage runs (first) only where a step
    that reads it must run."""
    import shutil

    monkeypatch.setenv("PERSPECT_CACHE", str(tmp_path / "cache"))
    stage = recipe.Step("stage", "dense", "stage", ships=False)
    up = recipe.Step("up", "dense", "up")
    uses = recipe.Step("uses", "dense", "uses", reads=("stage", "up"))
    root = tmp_path / "models"

    def plan(**kw):
        logs: list[str] = []
        got = recipe.make(tiny_perspectrum, root, [stage, up, uses], base=tiny_base,
                          dry_run=True, log=logs.append, **kw)  # fmt: skip
        return got, logs

    _, logs = plan()
    assert [line.split(":")[1].strip().split()[:2] for line in logs] == [["would", "run"]] * 3
    for i, name in enumerate(("stage", "up", "uses")):  # made in order, as a run records them
        key = plan()[0][i].key  # a key reads the entries made before it
        folder = recipe.entry_folder(name, root, ["stage"])
        full = tmp_path / "trained" / name
        full.mkdir(parents=True)
        (full / "manifest.json").write_text("{}")
        bundle.pack(full, folder, name=name, role="dense", base_id=tiny_base, record={})
        recipe.record_step(folder, name, key, 1.0)
    assert (recipe.intermediate_dir(root) / "stage").is_dir() and not (root / "stage").exists()
    recorded, logs = plan()
    assert all("up to date" in line for line in logs), logs
    shutil.rmtree(recipe.intermediate_dir(root))  # a fresh clone: the bundle alone
    fresh, logs = plan()
    assert [o.key for o in fresh] == [o.key for o in recorded]
    assert "stage: not needed" in logs[0] and all("up to date" in line for line in logs[1:])
    # an entry it reads is rewritten first: the step must run, so the stage is needed again
    shutil.rmtree(root / "up")
    _, logs = plan()
    assert logs[0].startswith("stage: would run") and "needed by uses" in logs[0]
    assert logs[1].startswith("up: would run") and logs[2].startswith("uses: would run")


@pytest.mark.slow
def test_a_repack_keeps_every_finished_step_up_to_date(
    tiny_perspectrum, tiny_base, tmp_path, monkeypatch
):
    """`repack` stores an entry anew (int8 differences from its base) and carries the records
    of the steps that read it over to their new keys: `make models` then finds nothing to redo,
    where without the carry-over the step reading it would read as stale."""
    import torch

    from perspect.reranker.model import PairModel
    from perspect.reranker.pair_net import freeze_lower

    root = tmp_path / "models"
    trained = PairModel.from_base(tiny_base, tasks=["relevance"])  # an entry training moved
    freeze_lower(trained.net.encoder, 1)
    with torch.no_grad():
        for p in trained.net.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))
    trained.save(root / "dense")
    recipe.make(tiny_perspectrum, root, [STEP], base=tiny_base, log=lambda _: None)
    monkeypatch.setattr(
        tensor_store, "HALF_MIN_ELEMENTS", 256
    )  # the tiny base's matrices are small
    logs: list[str] = []
    carried = recipe.repack(tiny_perspectrum, ["dense"], root, tiny_base, logs.append,
                            recipe=[STEP])  # fmt: skip
    assert carried == ["pair"] and bundle.BundleEntry.read(root / "dense").weights
    assert any(
        s.get("int8_delta") for s in bundle.BundleEntry.read(root / "dense").weights.values()
    )
    again = recipe.make(
        tiny_perspectrum, root, [STEP], base=tiny_base, dry_run=True, log=logs.append
    )
    assert [o.ran for o in again] == [False] and "pair: up to date" in logs[-1]
