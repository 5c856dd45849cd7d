"""The shipped model bundle (models/), end to end: what a fresh clone answers with.

- a real claim over a small real-world pool comes back with both sides, merged phrasings and
  evidence;
- on a fixed sample of 40 PERSPECTRUM dev claims, T1, T2 and T3 stay above floors set two points
  under the bundle's measured values (needs ../shared/data; skipped without it).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from perspect import api
from perspect.api import Perspect, Source
from perspect.core import paths
from perspect.core.model import bundle
from tests.conftest import PERSPECTRUM, write_json

MODELS = Path(__file__).resolve().parent.parent / "models"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (bundle.is_bundle(MODELS / "pair") and bundle.is_bundle(MODELS / "dense")),
        reason="the shipped bundle (models/pair, models/dense) is not in this checkout",
    ),
]

CLAIM = "animals should have lawful rights"
# (id, text, cluster): two phrasings of each point, two points per side, and distractors
POOL = [
    ("1", "Animals feel pain and suffer just like humans, so the law must protect them.", "pain"),
    ("2", "Animals are sentient beings that experience pain and suffering.", "pain"),
    ("3", "Legal rights for animals would end the cruelty of factory farming.", "farm"),
    ("4", "Giving animals rights would stop cruel industrial farming practices.", "farm"),
    ("5", "Animals cannot take on duties, so they cannot hold rights.", "duty"),
    ("6", "Rights come with responsibilities that animals are unable to bear.", "duty"),
    ("7", "Animal rights laws would ruin farmers and make food more expensive.", "cost"),
    ("8", "Granting rights to animals would destroy the livelihood of farmers.", "cost"),
    ("9", "School uniforms reduce bullying in classrooms.", None),
    ("10", "Nuclear power is a clean source of energy.", None),
    ("11", "Video games improve the reflexes of children.", None),
    ("12", "Space exploration wastes public money.", None),
]
EVIDENCE = [
    (
        "100",
        "Scientific studies show that mammals and birds have nervous systems that register "
        "pain; they flinch, cry out and avoid harm much as humans do. Causing such suffering "
        "without need is wrong, and the law should recognise it.",
    ),
    (
        "101",
        "Factory farms keep animals in tiny cages for their whole lives. Legal protections "
        "would force the industry to end these cruel practices.",
    ),
    (
        "102",
        "Rights and duties go together: only beings who can understand and accept moral "
        "obligations can be given rights. Animals cannot do so.",
    ),
    (
        "103",
        "Farming depends on using animals. If animals had rights, farmers would lose their "
        "income and food prices would rise for everyone.",
    ),
    ("104", "Uniforms make pupils look the same, which reduces teasing about clothing."),
]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory, monkeypatch_module):
    """An index of the small pool built with the bundle's retrievers (BM25 + its dense model + its
    ColBERT: what its decisions were fitted on)."""
    for var in ("PERSPECT_MODEL", "PERSPECT_MODELS", "PERSPECT_DENSE_MODEL"):
        monkeypatch_module.delenv(var, raising=False)
    monkeypatch_module.setenv("PERSPECT_MODELS", str(MODELS))
    monkeypatch_module.setenv("PERSPECT_COLBERT_MODEL", str(MODELS / "colbert"))
    d = tmp_path_factory.mktemp("shipped")
    pf = write_json(d / "p.json", [{"id": i, "text": t} for i, t, _ in POOL])
    ef = write_json(d / "e.json", [{"id": i, "text": t} for i, t in EVIDENCE])
    config = api.index_config(["bm25", "dense", "colbert"])
    assert config.backends["dense"]["model"] == str((MODELS / "dense").resolve())
    api.build_index("real", [Source("perspectives", pf), Source("evidence", ef)],
                    home=d, config=config)  # fmt: skip
    with Perspect.open("real", home=d, model=MODELS / "pair") as p:
        yield p


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_bundle_verifies_and_fits_its_budget():
    entries = api.models(MODELS)
    # one mpnet trunk (issue 62): the stance and relation trunks it descends from do not ship
    assert {e.name for e in entries} == {"pair", "dense", "equivalence", "colbert", "argument",
                                         "comparator"}  # fmt: skip
    assert all(bundle.verify(e) == [] for e in entries)
    assert sum(e.size for e in entries) <= 45_000_000  # issue 62's 45 MB (six entries, not five)
    for e in entries:  # each names the base it expects and what it was trained on
        assert e.name == e.folder.name, f"{e.folder.name}'s bundle calls itself {e.name!r}"
        mpnet = ("argument",)
        base = paths.PACKAGED_MPNET if e.name in mpnet else paths.PACKAGED_MINILM
        assert e.base_id == base and len(e.base_sha256) == 64
        assert e.record.get("data") and e.record.get("code")


def test_stance_comes_from_the_shipped_trunk_over_states_paid_once(shipped):
    """The pair model names the trunk; no version stores lower states (issue 62): with the
    states the build's completion kept beside the versions removed, a search computes those of
    its kept candidates once and keeps them there, its P(support) the trunk's; the idle fill of a
    long-lived process keeps the rest, after which a fresh reader (another process) computes
    none."""
    import numpy as np

    from perspect.core.index.kept_states import KeptStates
    from perspect.pipeline.lower import LowerStates
    from perspect.pipeline.stance import StanceScorer
    from perspect.reranker import stance_trunk

    engine = shipped.engine()
    trunk = engine.stance.trunk
    assert trunk is not None and trunk.served
    # the argument model's cuts judge the cited reasons: the joint reader is never loaded
    assert engine.arguing is not None and engine.evidence_stage.reader is None
    assert shipped._searcher.stance_states() is None  # none stored in the version
    kept = KeptStates(shipped._searcher.dir.root)
    assert kept.count() >= len(POOL)  # kept by the completion's last stage
    kept.path.unlink()  # as an index whose completion was not run to its end
    res = shipped.search(CLAIM)
    texts = [t for _, t, _ in POOL]
    assert kept.count() > 0 and len(kept.missing(trunk.states_key, texts)) < len(POOL)
    members = [m for c in res.clusters for m in c.members]
    text = {i: t for i, t, _ in POOL}
    if engine.bearing is None:
        direct = StanceScorer(engine.model, trunk)(CLAIM, [text[m.id] for m in members])
    else:  # the side is the bearing decision's, over the trunk's heads (pipeline.bearing)
        shown = {m.id: m.support for m in engine.kept(CLAIM, engine.retrieve(CLAIM, 30))[0]}
        direct = [shown[m.id] for m in members]
    np.testing.assert_allclose([m.support for m in members], direct, atol=0.03)
    from perspect.pipeline.arguing import JUDGMENTS, Arguing
    from perspect.pipeline.idle import _shown_pairs

    (shipped._searcher.dir.root / JUDGMENTS).unlink(missing_ok=True)  # none judged yet
    engine.arguing._pairs.clear()  # in this process either
    job = shipped.fill_in_background()
    job.thread.join(300)
    assert not job.running and kept.missing(trunk.states_key, texts) == []
    fresh = LowerStates(trunk, shipped._searcher)
    fresh(texts, [i for i, _, _ in POOL])
    assert fresh.computed == 0
    # then the judgments of every perspective's shown links, kept with the index: a fresh
    # reader (another process) finds each one, and a first search judges none
    with shipped._searcher.pinned():
        texts_by_id, pairs = _shown_pairs(
            shipped._searcher, shipped._searcher.links(), [i for i, _, _ in POOL],
            engine.evidence_stage,
        )  # fmt: skip
    assert pairs, "the pool's links cite no sentence"
    reader = Arguing(engine.arguing.model, shipped._searcher, fresh)
    assert all(reader.known(texts_by_id, pairs))
    needed: list[int] = []
    arguing = engine.arguing
    arguing.sentence_states = lambda sents, keep=True, _f=arguing.sentence_states: (
        needed.append(len(sents)), _f(sents, keep))[1]  # fmt: skip
    try:
        arguing._pairs.clear()  # this process's memory too: read from the index
        res = shipped.search("Animals deserve legal protection from cruelty")
        assert [e for c in res.clusters for e in c.evidence], "no evidence shown"
    finally:
        del arguing.sentence_states
    assert needed == [], "a first search judged links the fill had judged"
    assert stance_trunk.path_for(engine.model.manifest, engine.model.origin) is not None


def test_a_real_claim_gets_both_sides_merged_phrasings_and_evidence(shipped):
    res = shipped.search(CLAIM)
    assert res.coverage.support >= 1 and res.coverage.oppose >= 1, res.coverage
    assert not res.coverage.warning or "fitted on" not in res.coverage.warning
    cluster_of = {i: c for i, _, c in POOL}
    kept = [m.id for c in res.clusters for m in c.members]
    assert not any(cluster_of[i] is None for i in kept), "a distractor passed relevance"
    merged = [c for c in res.clusters if len(c.members) >= 2]
    assert merged, "no phrasings were merged"
    # at least one merged cluster holds the two phrasings of one point and nothing else
    assert any(len({cluster_of[m.id] for m in c.members}) == 1 for c in merged)
    assert any(e.verdict == "supports" for c in res.clusters for e in c.evidence)


@pytest.mark.data
def test_dev_sample_stays_above_the_floors(tmp_path, monkeypatch):
    """24 dev claims (fixed sample) over a reduced pool: their gold perspectives plus 1,500 other
    perspectives, with the trunk's stored states. T1-T3 read no evidence, so the pool has none
    and no links (the same figures as with the gold paragraphs and their links). 65 s alone on a
    quiet machine; 40 claims over 3,000 others took 101 s (T1 72.2, T2 78.9, T3 61.1), the
    slowest test of the suite, for a gate whose figures sit 5 to 10 points over its floors."""
    if not (PERSPECTRUM / "perspective_pool_v1.0.json").is_file():
        pytest.skip(f"shared PERSPECTRUM data not found at {PERSPECTRUM}")
    monkeypatch.delenv("PERSPECT_DENSE_MODEL", raising=False)  # the bundle's, not the packaged
    monkeypatch.setenv("PERSPECT_COLBERT_MODEL", str(MODELS / "colbert"))  # and its ColBERT
    f1 = _dev_sample_f1(tmp_path)
    for task, floor in FLOORS.items():
        assert f1[task] >= floor, f"{task} {f1[task]} below its floor {floor} ({f1})"


def _dev_sample_f1(tmp_path: Path, evidence: bool = False) -> dict[str, float]:
    import json
    import shutil

    from perspect.core.datasets.fetch import evidence_pool_file
    from perspect.core.datasets.perspectrum import PERSPECTIVES, load_claims, load_perspectives
    from perspect.core.model.decisions import Decisions
    from perspect.lab import perspectrum_eval as pe
    from perspect.lab.pools import pool_searcher
    from perspect.pipeline.engine import Engine
    from perspect.reranker.model import PairModel

    rng = random.Random(7)
    claims = sorted(load_claims(PERSPECTRUM, "dev"), key=lambda c: c.cid)
    sample = rng.sample(claims, SAMPLE)
    data = tmp_path / "data"
    shutil.copytree(PERSPECTRUM, data)
    pool = json.loads((PERSPECTRUM / PERSPECTIVES).read_text())
    gold_p = {p for c in sample for p in c.pids}
    others = [r for r in pool if r["pId"] not in gold_p]
    keep = [r for r in pool if r["pId"] in gold_p] + rng.sample(others, OTHERS)
    (data / PERSPECTIVES).write_text(json.dumps(keep))
    ev_file = evidence_pool_file(data)
    if evidence:  # gold paragraphs and 800 others, linked: T4 too
        ev = json.loads(ev_file.read_text())
        gold_e = {e for c in sample for cl in c.clusters for e in cl.evidence}
        ev_others = [r for r in ev if r["eId"] not in gold_e]
        ev_file.write_text(
            json.dumps([r for r in ev if r["eId"] in gold_e] + rng.sample(ev_others, 800))
        )
    else:
        ev_file.unlink()
    model = PairModel.load(MODELS / "pair")
    # the retrievers the bundle's decisions were fitted with (its relevance stack reads the fused
    # RRF score, which a missing retriever lowers): make demo's index
    retrievers = (
        ("bm25", "dense", "colbert") if bundle.is_bundle(MODELS / "colbert") else ("bm25", "dense")
    )
    with paths.models_dir_set_to(MODELS):
        searcher = pool_searcher(
            data, tmp_path / "idx", retrievers=retrievers, links=evidence, stance_states=True
        )
        dense = searcher.backend("perspectives", "dense").config["model"]
        assert Path(dense).resolve() == (MODELS / "dense").resolve(), dense
        tasks = ("relevance", "stance", "equivalence", *(("evidence",) if evidence else ()))
        engine = Engine.load(searcher, model)
        pred = pe.predict(engine, sample, load_perspectives(data), tasks=tasks)
        searcher.close()
    got = pe.score(pred, Decisions.from_manifest(model.manifest))
    return {k: round(100 * v.f1, 1) for k, v in got.items()}


# The shipped bundle on this sample (2026-11-28): T1 73.4, T2 78.1, T3 58.9. The floors keep the
# margins the 40-claim sample's had (6.0, 9.5 and 5.3 points under 72.2, 78.9 and 61.1: two
# points under the first shipped bundle there). On BM25 + dense alone, without the ColBERT its
# decisions were fitted with, the bundle's T1 falls far under (24.1 on the 40 claims: its
# relevance stack reads the fused RRF score, which a missing leg lowers).
FLOORS = {"T1": 67.4, "T2": 68.6, "T3": 53.6}
SAMPLE, OTHERS = 24, 1500  # dev claims, and perspectives of other claims beside their gold


@pytest.mark.skipif(
    not (PERSPECTRUM / "perspective_pool_v1.0.json").is_file(),
    reason="needs the PERSPECTRUM files in ../shared/data/perspectrum",
)
def test_make_models_finds_the_committed_bundle_up_to_date():
    """A fresh clone resumes from what is committed: every step of the shipped recipe (the
    Makefile's defaults) is recorded with the key of its inputs, so `make models` trains nothing."""
    from perspect.lab import recipe

    claimdiff = PERSPECTRUM.parent / "claimdiff"
    if not (claimdiff / "ClaimDiff-S").is_dir():
        pytest.skip(f"the comparator step needs ClaimDiff at {claimdiff}")
    vitaminc = PERSPECTRUM.parent / "vitaminc" / "vitaminc_real_shared.jsonl"
    if not vitaminc.is_file():
        pytest.skip(f"the stance trunk step needs VitaminC at {vitaminc}")
    inference = PERSPECTRUM.parent / "inference"
    if not (inference / "snli.jsonl").is_file():
        pytest.skip(f"the relation model's step needs the inference pairs at {inference}")
    said: list[str] = []
    outcomes = recipe.make(
        PERSPECTRUM,
        MODELS,
        recipe.steps(),
        dry_run=True,
        log=said.append,
        other=recipe.OtherData(claimdiff, vitaminc=vitaminc, inference=inference),
    )
    assert [o.step for o in outcomes] == [s.name for s in recipe.steps()]
    # the trunks the argument model descends from are intermediate stages (in the cache, where
    # made): on a fresh clone "not needed", since nothing that reads them has to run
    staged = {s.name for s in recipe.steps() if not s.ships}
    for line in said:
        name = line.split(":")[0]
        assert "up to date" in line or (name in staged and "not needed" in line), said


def test_arguments_about_the_thing_a_claim_acts_on_are_placed_by_its_second_reading(shipped):
    """The hand-written sources of bench/sources/ (issue 45): each arguing article's sentences
    take its side. Read against "Zoos should be closed" alone, "zoos save species" is a coin
    toss (AUROC .41 on the zoo articles); with the claim's second reading ("Zoos are good", the
    other way round) the shipped decision places them (.90), and all three claims gain (.66 ->
    .80, bench/RESULTS.md)."""
    import json

    from sklearn.metrics import roc_auc_score

    from perspect.indexer.news import sentence_spans

    engine = shipped.engine()
    sources = Path(__file__).resolve().parent.parent / "bench" / "sources"
    claims = {
        "zoos": "Zoos should be closed",
        "crypto": "Cryptocurrency should be banned",
        "ai_pause": "Artificial intelligence research should be paused",
    }
    manifest = engine.model.manifest["stance_trunk"]
    fitted = dict(manifest["valence"])
    assert fitted["weight"] > 0
    got = {}
    try:
        for weight in (0.0, fitted["weight"]):
            manifest["valence"] = {**fitted, "weight": weight}
            ys, ps = [], []
            for name, claim in claims.items():
                for line in (sources / f"{name}.jsonl").read_text().splitlines():
                    art = json.loads(line)
                    # bench/reader.py's KIND: articles 1-4 argue for, 5-8 against, 9-10 report
                    number = int(art["id"].rsplit("-", 1)[1])
                    if number > 8:
                        continue
                    side = 1 if number <= 4 else 0
                    texts = [art["text"][a:b] for a, b in sentence_spans(art["text"])]
                    ps.extend(engine.stance(claim, texts))
                    ys.extend([side] * len(texts))
            got[weight] = roc_auc_score(ys, ps)
    finally:
        manifest["valence"] = fitted
    assert len(ys) == 78
    # the claim's second reading places them at least as well as the claim alone (before the
    # direction-trained trunk, alone .41-.72; with it, the claim alone already reads .82)
    assert got[fitted["weight"]] >= max(0.76, got[0.0] - 0.005), got


def test_a_search_says_how_it_read_a_claim_that_acts_on_a_thing(shipped, capsys):
    """The JSON, the CLI and the HTTP body say when the sides were read with the claim's second
    reading (a reader can see why an argument about zoos sits on a side of closing them), and
    say nothing for a claim without one."""
    from perspect.core.presentation.render import print_result

    res = shipped.search("Factory farming should be banned")
    assert res.clusters  # the small pool's farming perspectives
    assert res.to_json()["second_reading"] == {"text": "Factory farming is good", "sign": -1}
    print_result(res)
    out = capsys.readouterr().out
    assert "also read as “Factory farming is good”, the other way round" in out
    plain = shipped.search(CLAIM)
    assert plain.second_reading is None and plain.to_json()["second_reading"] is None
