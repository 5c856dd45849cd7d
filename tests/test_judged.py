"""The judged set (issue 71): ids and labels only, each claim in one split, each label from two
judges who agreed; the tally's agreement and kappa; batches give every item to two judges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perspect.lab import judged
from perspect.lab.judged_tally import kappa

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "judged"
CLAIMS = ROOT.parent / "shared" / "data" / "claims" / "internet_claims.txt"


def _rows(name: str) -> list[dict]:
    return [json.loads(x) for x in (HERE / name).read_text().splitlines() if x.strip()]


def test_the_committed_set_is_ids_and_labels_and_keeps_claims_apart():
    items = {r["id"]: r for r in _rows("items.jsonl")}
    labels = _rows("labels.jsonl")
    claims = {r["id"]: r for r in _rows("claims.jsonl")}
    assert len(labels) >= 10_000, len(labels)
    for r in labels:
        assert r["id"] in items and r["q"] in judged.QUESTIONS
        assert set(r) == {"id", "q", "claim", "split", "labels", "label"}  # no third-party text
        assert r["label"] is None or (
            r["label"] in r["labels"] and r["label"] in judged.QUESTIONS[r["q"]]
        )
        assert (
            r["split"]
            == claims[r["claim"]]["split"]
            == judged.claim_split(claims[r["claim"]]["text"])
        )
    for it in items.values():
        assert set(it) <= {"id", "q", "claim", "pid", "eid", "sent", "article", "found"}
    manifest = json.loads((HERE / "manifest.json").read_text())
    assert manifest["judgments"] == 2 * len(labels)
    assert (
        manifest["labels_sha256"]
        == judged.hashlib.sha256((HERE / "labels.jsonl").read_bytes()).hexdigest()
    )
    for q, got in manifest["agreement"].items():
        assert 0.6 <= got["agree"] <= 1 and got["kappa"] > 0.5, (q, got)


def test_a_claim_falls_in_one_split_by_its_text():
    splits = {judged.claim_split(f"claim number {i}") for i in range(200)}
    assert splits == {"train", "tune", "report"}
    assert judged.claim_split("Zoos do harm ") == judged.claim_split("zoos do harm")


def test_kappa_is_one_for_agreement_and_zero_for_chance():
    assert kappa([("a", "a"), ("b", "b"), ("a", "a")]) == 1.0
    assert abs(kappa([("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")])) < 1e-9


def test_every_item_goes_to_two_batches_and_the_tally_joins_them(tmp_path, monkeypatch):
    from perspect.lab import judged_tally

    claims = [judged.Claim(judged.claim_id(t), t, "own", judged.claim_split(t))
              for t in ("Zoos should go", "Cash should go")]  # fmt: skip
    items = [{"id": f"cp:{c.id}:{p}", "q": "cp", "claim": c.id, "pid": str(p), "found": []}
             for c in claims for p in (1, 2, 3)]  # fmt: skip
    batches = judged.make_batches(items, 4, seed=3)
    seen: dict[str, list[int]] = {}
    for n, b in enumerate(batches):
        for it in b:
            seen.setdefault(it["id"], []).append(n)
    assert all(len(v) == 2 and v[0] != v[1] for v in seen.values())
    # two judges' files: they disagree on one item, which is then dropped
    for n, b in enumerate(batches):
        name = f"batch-{n:03d}-cp-r{b[0]['rep']}.jsonl"
        (tmp_path / name).write_text(
            "".join(json.dumps({"id": it["id"], "q": "cp"}) + "\n" for it in b)
        )
        out = []
        for it in b:
            label = "for"
            if it["id"] == items[0]["id"] and it["rep"] == 1:
                label = "against"
            out.append(json.dumps({"id": it["id"], "label": label}))
        (tmp_path / f"out-{n:03d}.jsonl").write_text("\n".join(out) + "\n")
    here = tmp_path / "set"
    here.mkdir()
    (here / "FORM.txt").write_text("form")
    (here / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    monkeypatch.setattr(judged_tally, "HERE", here)
    judged_tally.tally(tmp_path, claims, items)
    rows = [json.loads(x) for x in (here / "labels.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and sum(r["label"] is None for r in rows) == 1
    man = json.loads((here / "manifest.json").read_text())
    assert man["agreement"]["cp"]["items"] == 6 and man["agreement"]["cp"]["agree"] == round(
        5 / 6, 4
    )


@pytest.mark.skipif(not CLAIMS.is_file(), reason=f"no web claims at {CLAIMS}")
def test_the_web_claims_and_ours_are_read_once_each():
    claims = judged.load_claims()
    assert len({c.text.casefold() for c in claims}) == len(claims)
    assert {c.source for c in claims} == {"internet", "own"}
