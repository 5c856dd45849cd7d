"""The ClaimDiff comparator's mechanics with tiny models the tests make: direction, rationale spans,
the split and mix of the data, training and evaluation end to end on a hand-written ClaimDiff
folder, and the saved entry's round trip."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perspect.core.datasets import claimdiff as cd
from perspect.lab import claimdiff as lab
from perspect.reranker.comparator import Comparator, rationale_spans
from tests.conftest import run_cli

# (topic, article A, article B, claim A, claim B, S, W, rationale)
PAIRS = [
    (
        "Minimum wage",
        "Wage hike passes",
        "Wage debate",
        "The raise lifted pay for two million workers.",
        "Higher minimum wages help low-paid workers.",
        1,
        0,
        ["lifted pay for two million workers"],
    ),
    (
        "Minimum wage",
        "Wage hike passes",
        "Wage debate",
        "Small firms cut hours after the raise.",
        "Higher minimum wages help low-paid workers.",
        0,
        1,
        ["cut hours"],
    ),
    (
        "Minimum wage",
        "Wage hike passes",
        "Wage debate",
        "The vote took place on Tuesday.",
        "Economists met in Boston last spring.",
        0,
        0,
        [],
    ),
    (
        "Mars mission",
        "Rover lands",
        "Space budget",
        "The rover found traces of ancient water.",
        "Mars may once have hosted life.",
        1,
        0,
        ["traces of ancient water"],
    ),
    (
        "Mars mission",
        "Rover lands",
        "Space budget",
        "The sample showed no organic molecules.",
        "Mars may once have hosted life.",
        0,
        1,
        ["no organic molecules"],
    ),
    (
        "Mars mission",
        "Rover lands",
        "Space budget",
        "Engineers celebrated in Pasadena.",
        "Congress debated the budget for months.",
        0,
        0,
        [],
    ),
    (
        "Bridge repair",
        "Bridge reopens",
        "Traffic woes",
        "The repaired bridge carries twice the load.",
        "The bridge is now safer.",
        1,
        0,
        ["carries twice the load"],
    ),
    (
        "Bridge repair",
        "Bridge reopens",
        "Traffic woes",
        "Inspectors found new cracks in March.",
        "The bridge is now safer.",
        0,
        1,
        ["new cracks"],
    ),
]


def write_claimdiff(folder: Path, copies: int = 3) -> Path:
    s, w = [], []
    for k in range(copies):  # topics repeated under new names: enough topics for every split
        for i, (topic, aa, ab, ca, cb, sv, wv, rat) in enumerate(PAIRS):
            base = {
                "topic": f"{topic} {k}",
                "date": "2024-01-0" + str(1 + i % 9),
                "pair_id": f"p{k}-{i}",
                "claim_a": ca,
                "claim_b": cb,
                "article_a": f"{aa} {k}",
                "article_b": f"{ab} {k}",
            }
            s.append({**base, "relation": sv, "rationale": rat if sv else []})
            w.append({**base, "relation": wv, "rationale": rat if wv else []})
    (folder / "ClaimDiff-S").mkdir(parents=True)
    (folder / "ClaimDiff-W").mkdir(parents=True)
    (folder / cd.S_FILE.format(split="train")).write_text(json.dumps({"data": s}))
    (folder / cd.W_FILE.format(split="train")).write_text(json.dumps({"data": w}))
    return folder


@pytest.fixture(scope="session")
def tiny_claimdiff(tmp_path_factory) -> Path:
    return write_claimdiff(tmp_path_factory.mktemp("claimdiff"))


def test_splits_are_disjoint_by_topic_and_cover_train(tiny_claimdiff):
    parts = {s: cd.load_pairs(tiny_claimdiff, s) for s in ("fit", "tune", "dev")}
    topics = {s: {p.topic for p in ps} for s, ps in parts.items()}
    assert not (topics["fit"] & topics["tune"]) and not (topics["fit"] & topics["dev"])
    assert not (topics["tune"] & topics["dev"])
    assert sum(len(p) for p in parts.values()) == len(cd.load_pairs(tiny_claimdiff, "train"))
    assert all(parts.values())
    rel = {p.pair_id: p.relation for p in cd.load_pairs(tiny_claimdiff, "train")}
    assert rel["p0-0"] == "strengthen" and rel["p0-1"] == "weaken" and rel["p0-2"] == "neither"


def test_mixed_adds_unrelated_in_topic_pairs_never_annotated(tiny_claimdiff):
    pairs = cd.load_pairs(tiny_claimdiff, "train")
    annotated = {(p.claim_a, p.claim_b) for p in pairs}
    mix = cd.mixed(pairs)
    extra = [p for p in mix if not p.annotated]
    assert extra and all(p.relation == "neither" for p in extra)
    assert all((p.claim_a, p.claim_b) not in annotated for p in extra)
    topic_of = {p.claim_a: p.topic for p in pairs} | {p.claim_b: p.topic for p in pairs}
    assert all(topic_of[p.claim_a] == topic_of[p.claim_b] for p in extra)
    share = sum(p.relation == "strengthen" for p in mix) / len(mix)
    assert share < sum(p.relation == "strengthen" for p in pairs) / len(pairs)


def test_rationale_phrases_map_to_their_characters():
    claim = "Small firms Cut Hours after the raise."
    spans = cd.rationale_spans(claim, ("cut hours", "missing phrase"))
    assert [claim[s:e] for s, e in spans] == ["Cut Hours"]


def test_tagged_wordpieces_become_whole_word_spans(tiny_base):
    model = Comparator.from_base(tiny_base, rank=2)
    a = "Inspectors found unprecedented microfractures in March."
    enc = model.encode([(a, "The bridge is safer.")], offsets=True)
    offs, seq = enc["offset_mapping"][0], enc.sequence_ids(0)
    toks = [(int(s), int(e)) for (s, e), sid in zip(offs.tolist(), seq, strict=True) if sid == 0]
    # tag only the wordpieces inside "unprecedented cracks" (the first piece of each word, too)
    start = a.index("unprecedented")
    end = a.index(" in March")
    tagged = [(s, e, 0.9 if start <= s < end else 0.1) for s, e in toks]
    spans = rationale_spans(a, tagged, 0.5)
    assert [a[s:e] for s, e in spans] == ["unprecedented microfractures"]
    # one piece of a word tagged: the whole word comes back
    word = a.index("microfractures")
    piece = next((s, e) for s, e in toks if word < s < a.index(" in March"))
    spans = rationale_spans(a, [(piece[0], piece[1], 0.9)], 0.5)
    assert [a[s:e] for s, e in spans] == ["microfractures"]


def test_direction_matters(tiny_base):
    """A -> B and B -> A are different inputs (segment ids), and a model tells them apart."""
    model = Comparator.from_base(tiny_base, rank=2)
    a, b = "The rover found traces of water.", "Mars once had life."
    ab = model.encode([(a, b)])
    ba = model.encode([(b, a)])
    assert not np.array_equal(ab["input_ids"].numpy(), ba["input_ids"].numpy())
    import torch

    with torch.no_grad():  # the heads are random: a nudge makes the two directions differ
        model.net.relation.weight.normal_(0, 1.0)
    p_ab, _ = model.scores([(a, b)])
    p_ba, _ = model.scores([(b, a)])
    assert not np.allclose(p_ab, p_ba)


def test_best_threshold_and_token_f1():
    gold = np.array([1, 1, 0, 0, 1], dtype=bool)
    p = np.array([0.9, 0.8, 0.7, 0.2, 0.6])
    t = lab.best_threshold(gold, p)
    assert 0.2 < t <= 0.6  # all three positives in, the low negative out
    assert lab.token_f1("cut hours", ["cut hours"]) == 1.0
    assert lab.token_f1("cut", ["cut hours"]) == pytest.approx(2 / 3)
    assert lab.token_f1("", ["cut hours"]) == 0.0


def test_train_quick_saves_an_entry_that_loads_and_evaluates(tiny_claimdiff, tiny_base, tmp_path):
    out = tmp_path / "comparator"
    prof = lab.resolve_profile("quick", epochs=2.0)
    m = lab.train_comparator(tiny_claimdiff, out, base=tiny_base, profile=prof, log=lambda s: None)
    assert (out / "bundle.json").is_file()
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    assert (out / "adapter" / "adapter_config.json").is_file()
    entry = json.loads((out / "bundle.json").read_text())
    assert entry["role"] == "comparator"
    stored = out / "encoder" / "model.safetensors"  # the frozen base: nothing of it stored
    if stored.is_file():
        from safetensors.torch import load_file

        assert load_file(str(stored)) == {}
    for setting in ("pairs", "doc"):
        assert set(m["thresholds"][setting]) == {"strengthen", "weaken"}
    assert set(m["dev_metrics"]) >= {"dev", "dev-doc", "tune"}
    loaded = Comparator.load(out)
    pairs = [("The repaired bridge carries twice the load.", "The bridge is now safer.")]
    p1, _ = loaded.scores(pairs)
    assert p1.shape == (1, 3) and abs(float(p1.sum()) - 1) < 1e-5
    rel = loaded.compare(pairs, setting="doc")[0]
    assert rel.relation in cd.RELATIONS
    scores = lab.evaluate_claimdiff(out, tiny_claimdiff, "dev")
    assert [s.split for s in scores] == ["dev", "dev-doc"]
    j = scores[0].to_json()
    assert set(j) >= {"S", "W", "rationale"} and 0 <= j["S"]["auroc"] <= 1


def test_cli_eval_claimdiff_json_and_bad_model(tiny_claimdiff, tiny_base, tmp_path):
    out = tmp_path / "cmp"
    lab.train_comparator(tiny_claimdiff, out, base=tiny_base, profile="quick", log=lambda s: None)
    r = run_cli("eval", "claimdiff", "--data", str(tiny_claimdiff), "--model", str(out), "--json")
    got = json.loads(r.stdout)
    for key in ("S", "W"):
        assert set(got[key]) >= {"auroc", "f1", "precision", "recall"}
    assert "token_f1" in got["rationale"]
    assert got["doc"]["split"] == "dev-doc"
    bad = run_cli(
        "eval",
        "claimdiff",
        "--data",
        str(tiny_claimdiff),
        "--model",
        str(tmp_path / "nope"),
        ok=False,
    )
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "comparator" in bad.stderr or "no " in bad.stderr


def test_merged_adapters_give_the_same_outputs(tiny_base):
    import torch
    from peft.tuners.lora import LoraLayer

    model = Comparator.from_base(tiny_base, rank=2)
    with torch.no_grad():
        for n, p in model.net.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5)
    pairs = [("The rover found traces of water.", "Mars once had life.")]
    before, _ = model.scores(pairs)
    assert model.net.merge_adapters() > 0
    assert not any(isinstance(m, LoraLayer) for m in model.net.modules())
    after, _ = model.scores(pairs)
    assert np.allclose(before, after, atol=1e-5)


def test_adapters_cover_the_blocks_linear_layers_and_not_the_pooler(tiny_base):
    """The layers the hand-written adapters covered (the shipped ones were converted from them):
    every linear layer inside the encoder's blocks, six per block, and nothing else."""
    from peft.tuners.lora import LoraLayer

    model = Comparator.from_base(tiny_base, rank=2)
    adapted = [n for n, m in model.net.encoder.named_modules() if isinstance(m, LoraLayer)]
    kinds = sorted({n.split(".layer.")[1].split(".", 1)[1] for n in adapted})
    assert kinds == [
        "attention.output.dense",
        "attention.self.key",
        "attention.self.query",
        "attention.self.value",
        "intermediate.dense",
        "output.dense",
    ]
    assert len(adapted) == 6 * 2 and not any("pooler" in n for n in adapted)
    trainable = {n for n, p in model.net.named_parameters() if p.requires_grad}
    assert trainable and all(
        "lora_" in n or n.startswith(("relation.", "rationale.")) for n in trainable
    )


def test_a_loaded_comparator_saves_no_adapters(tiny_claimdiff, tiny_base, tmp_path):
    """Loading merges the adapters for inference: saving that model would write none, so it
    says so instead of writing an entry that cannot load."""
    from perspect.core.errors import ModelError

    out = tmp_path / "comparator"
    prof = lab.resolve_profile("quick", epochs=1.0)
    lab.train_comparator(tiny_claimdiff, out, base=tiny_base, profile=prof, log=lambda s: None)
    with pytest.raises(ModelError, match="merged"):
        Comparator.load(out).save(tmp_path / "again")


def test_fetch_claimdiff_writes_a_news_pool_of_its_articles(tiny_claimdiff, tmp_path):
    from perspect.core.datasets.fetch import CLAIMDIFF_NEWS, fetch_local
    from perspect.indexer.news import read_news

    written = fetch_local("claimdiff", tiny_claimdiff, tmp_path / "cd")
    assert (tmp_path / "cd" / cd.S_FILE.format(split="train")).is_file()
    news = tmp_path / "cd" / CLAIMDIFF_NEWS
    assert news in written
    articles = [json.loads(line) for line in news.read_text().splitlines()]
    titles = {p.article_a for p in cd.load_pairs(tiny_claimdiff, "train")}
    titles |= {p.article_b for p in cd.load_pairs(tiny_claimdiff, "train")}
    assert {a["title"] for a in articles} == titles
    report = read_news(news)
    assert report.items and all(i.metadata["title"] in titles for i in report.items)
    sentences = {i.text for i in report.items}
    assert "The raise lifted pay for two million workers." in sentences


def write_inference(folder: Path, n: int = 80) -> Path:
    """The four inference files with `n` made-up pairs each (every premise its own: about a
    tenth are held out by premise, as the real split)."""
    from perspect.lab.train.relation_data import NLI_FILES

    folder.mkdir(parents=True, exist_ok=True)
    labels = ("entailment", "neutral", "contradiction")
    for name in NLI_FILES:
        with (folder / f"{name}.jsonl").open("w") as f:
            for i in range(n):
                lab = labels[i % 3]
                hyp = {"entailment": "A man is outside.", "neutral": "A man is at work.",
                       "contradiction": "Nobody is outside."}[lab]  # fmt: skip
                row = {"premise": f"A man walks his dog {i} in the {name} park.",
                       "hypothesis": hyp, "label": lab}  # fmt: skip
                f.write(json.dumps(row) + "\n")
    return folder


def test_the_joint_reader_trains_an_inference_head_with_fitted_cuts(
    tiny_claimdiff, tiny_base, tmp_path
):
    """A profile with `inference` trains the inference head beside ClaimDiff, fits the compare
    cuts on held-out pairs and reports the others; the saved entry reads inference on PyTorch
    and on its exported graph alike, and compare reads its cuts."""
    from perspect.pipeline.compare import CompareConfig, relation_cuts

    nli = write_inference(tmp_path / "inference")
    out = tmp_path / "reader"
    prof = lab.resolve_profile("quick", inference=True, inference_epochs=1.0, max_pairs=None)
    m = lab.train_comparator(
        tiny_claimdiff, out, base=tiny_base, profile=prof, log=lambda s: None, inference=nli
    )
    assert m["nli_labels"] == ["entailment", "neutral", "contradiction"]
    held = m["dev_metrics"]["nli_held"]
    assert held["n"] > 0 and 0 <= held["accuracy"] <= 100
    cuts = m["decisions"]["compare"]
    assert {"entail_at", "contradict_at"} <= set(cuts)
    assert any(d["file"] == "inference/snli.jsonl" for d in m["data"])
    loaded = Comparator.load(out)
    assert loaded.reads_inference
    pairs = [("A man walks his dog in the park.", "Nobody is outside.")] * 3
    p = loaded.inference(pairs)
    assert p.shape == (3, 3) and np.allclose(p.sum(1), 1, atol=1e-5)
    served = loaded.for_inference()
    assert served.net is None  # on ONNX Runtime: the graph carries the third head
    assert np.allclose(served.inference(pairs), p, atol=1e-4)
    assert relation_cuts(served, CompareConfig()) == (cuts["contradict_at"], cuts["entail_at"])


def test_a_comparator_without_the_inference_head_refuses_inference(tiny_base):
    from perspect.core.errors import ModelError

    model = Comparator.from_base(tiny_base, rank=2)
    assert not model.reads_inference
    with pytest.raises(ModelError, match="no inference head"):
        model.inference([("a", "b")])


def test_paraphrase_rows_front_a_closing_phrase_and_keep_proper_names():
    import random

    from perspect.lab.train.relation_data import front_phrase, paraphrase_rows

    assert (
        front_phrase("The council voted on the parking rules on Monday.")
        == "On Monday, the council voted on the parking rules."
    )
    assert front_phrase("Hong Kong's market is busy near the station.") == (
        "Near the station, Hong Kong's market is busy."
    )
    assert front_phrase("Nobody came.") is None
    rows = [("nli", f"A man sits on bench {i} in the park.", "x", 1, "snli") for i in range(9)]
    got = paraphrase_rows(rows, random.Random(0), 6)
    assert len(got) == 6 and all(r[3] == 0 and r[4] == "paraphrase" for r in got)
    assert any(r[2].startswith("In the park, a man sits") for r in got)
