"""Fit the mining decision (perspect.core.model.decisions.MiningDecision) on held-out train
claims, report it on dev, and write it into the pair model's manifest (`decisions.mining`).

The data: an index whose documents are PERSPECTRUM's evidence paragraphs split into sentences
(and ClaimDiff's news articles, which are mostly reporting). For each claim, the candidates a
search would read (perspect.pipeline.mining: retrieved, over a loose cosine gate) are labelled
against the claim's gold perspectives: a candidate is an argument on the claim when the
equivalence cross-encoder (models/equivalence, both orders, claim-conditioned) says it makes the
point of one of them (P >= MATCH), on that cluster's side. A sentence that argues a point the
gold set lacks counts as wrong: the precision fitted here is a floor.

Fitted on the tune claims (the held-out 15 % of train: perspect.core.datasets.perspectrum), in
order: the argument stack (all candidates), the cut: the lowest whose shown sentences are
arguments on the right side at least PRECISION of the time (keeping MIN_KEPT), and the cosine
gate (the cosine under which fewer than GATE_LOSS of the matched candidates lie). The side is
the stance decision curated perspectives get (pipeline.stance.StanceScorer.from_trunk), not
fitted here. Dev claims are only reported. Never test.

Where it is written: the pair model's manifest (`decisions.mining`), beside the other decisions a
search acts on, by the `make models` step `mining` (perspect.lab.recipe), which builds its index
(`scratch_index`: the perspective pool, the evidence paragraphs as documents, ClaimDiff's
articles as news, with the bundle's retrievers) in the cache and keeps it, with the labelled rows,
for a rerun of the same inputs. By hand:
python -m perspect.lab.mining_fit [--index NAME --home DIR] [--write models/pair]
"""

from __future__ import annotations

import argparse
import json
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core import paths
from perspect.core.datasets.fetch import evidence_pool_file
from perspect.core.datasets.perspectrum import (
    PERSPECTIVES,
    Claim,
    data_fingerprints,
    load_claims,
    load_perspectives,
    tune_claims_of,
)
from perspect.core.index.config import IndexConfig
from perspect.core.model import decision_stack
from perspect.core.model.bundle import MANIFEST, sha256_file
from perspect.core.model.decisions import MiningDecision
from perspect.indexer.indexer import Indexer, Source
from perspect.pipeline.engine import Engine, EngineConfig
from perspect.retriever.searcher import Searcher

MATCH = 0.5  # P(same point) of the equivalence cross-encoder: a sentence makes a gold point
PRECISION = 0.8  # shown mined sentences that make a gold point (arguments), on tune
SIDE_PRECISION = 0.8  # mined-only clusters' sides shown right, on tune (else unclear)
NEVER = 0.5  # a side margin no P(support) reaches: every mined-only cluster is unclear
MIN_KEPT = 30
GATE = 0.2  # the loose cosine gate candidates are gathered with, before the fitted one
GATE_LOSS = 0.05  # the fitted gate loses at most this share of the matched candidates
PER_POOL, MOST = 16, 16  # candidates per claim while fitting (the engine reads fewer)


@dataclass
class Rows:
    """Every candidate of a set of claims: features, the model's raw P(support), cosine,
    labels (matched gold cluster's side: 1 support, 0 oppose, -1 no match) and where it came
    from (claim index, gold cluster index or -1)."""

    features: dict[str, np.ndarray]
    raw: np.ndarray
    cosine: np.ndarray
    side: np.ndarray
    claim: np.ndarray
    cluster: np.ndarray
    texts: list[str]
    support: np.ndarray | None = None  # the stance decision's P(support) (sides_shown)

    @property
    def matched(self) -> np.ndarray:
        return self.side >= 0


def collect(engine: Engine, claims: Sequence[Claim], perspectives: dict[int, str], log) -> Rows:
    """The candidates of each claim, read by the relation model, labelled by the cross-encoder."""
    mining = engine.mining
    ce = engine.equivalence_ce
    if ce is None:
        raise SystemExit("the pair model names no equivalence cross-encoder: nothing to label with")
    mining.per_pool, mining.most = PER_POOL, MOST
    feats: list[dict[str, np.ndarray]] = []
    raw, cos, side, cl_of, which, texts = [], [], [], [], [], []
    for ci, claim in enumerate(claims):
        query = engine.retrieve.query(claim.text, vector=True)
        cands = mining.gather(query, GATE)
        if not cands:
            continue
        heads, f = mining.read(query, cands)
        feats.append(f)
        raw.append(heads["stance"])
        cos.append(f["cosine"])
        best, at = match(ce, claim, [c.hit.text for c in cands], perspectives)
        for b, g in zip(best, at, strict=True):
            ok = b >= MATCH
            side.append((1 if claim.clusters[g].stance == "SUPPORT" else 0) if ok else -1)
            which.append(g if ok else -1)
        cl_of += [ci] * len(cands)
        texts += [c.hit.text for c in cands]
        if (ci + 1) % 10 == 0:
            log(f"  {ci + 1}/{len(claims)} claims, {len(texts)} candidates")
    names = list(feats[0]) if feats else []
    return Rows(
        {k: np.concatenate([f[k] for f in feats]) for k in names},
        np.concatenate(raw) if raw else np.zeros(0),
        np.concatenate(cos) if cos else np.zeros(0),
        np.array(side),
        np.array(cl_of),
        np.array(which),
        texts,
    )


def match(
    ce, claim: Claim, texts: Sequence[str], perspectives: dict[int, str]
) -> tuple[np.ndarray, np.ndarray]:
    """Each text's best P(same point) with a gold perspective of `claim`, and that one's cluster."""
    gold = [(g, perspectives[p]) for g, c in enumerate(claim.clusters) for p in c.pids
            if p in perspectives]  # fmt: skip
    pairs = [(t, p) for t in texts for _, p in gold]
    if not pairs:
        return np.zeros(len(texts)), np.zeros(len(texts), dtype=int)
    p = np.asarray(ce.predict(claim.text, pairs)).reshape(len(texts), len(gold))
    arg = p.argmax(1)
    return p.max(1), np.array([gold[i][0] for i in arg])


ARGUMENT_EXCLUDED = ("stance",)  # the side's direction says nothing of being an argument


def fit(rows: Rows, stance_side: float) -> MiningDecision:
    m = rows.matched
    names = sorted(k for k in rows.features if k not in ARGUMENT_EXCLUDED)
    X = np.stack([rows.features[k] for k in names], 1)
    stack = decision_stack.fit(names, X, m.astype(float))
    decision = MiningDecision(stack, gate(rows))
    cut = precision_cut(m, stack.prob(rows.features), rows.cosine >= decision.min_similarity)
    margin = side_margin(rows, stance_side)
    return MiningDecision(stack.with_threshold(cut), decision.min_similarity, margin)


def side_margin(rows: Rows, stance_side: float) -> float:
    """The smallest distance from the side cut past which the matched candidates' sides are
    right at least SIDE_PRECISION of the time (keeping MIN_KEPT); NEVER where none is."""
    m = rows.matched
    right = sides_right(rows, stance_side)[m]
    dist = np.abs(rows.support[m] - stance_side)
    for margin in np.arange(0.0, NEVER, 0.01):
        sided = dist >= margin
        if sided.sum() < MIN_KEPT:
            break
        if right[sided].mean() >= SIDE_PRECISION:
            return round(float(margin), 2)
    return NEVER


def sides_right(rows: Rows, stance_side: float) -> np.ndarray:
    """Whether the side shown (the stance decision's P(support) against the side cut) is the
    gold cluster's side (meaningful where a candidate is matched)."""
    assert rows.support is not None
    return (rows.support >= stance_side) == (rows.side == 1)


def with_support(engine: Engine, rows: Rows, claims: Sequence[Claim]) -> Rows:
    """`rows` with the stance decision's P(support) of each candidate (from its stored trunk
    P(support) and, where the stack reads it, the pair head's)."""
    if getattr(rows, "support", None) is not None:
        return rows
    support = np.zeros(len(rows.raw))
    for ci, claim in enumerate(claims):
        at = np.where(rows.claim == ci)[0]
        if len(at):
            texts = [rows.texts[i] for i in at]
            support[at] = engine.stance.from_trunk(claim.text, texts, rows.raw[at])
    rows.support = support
    return rows


def gate(rows: Rows) -> float:
    """The cosine under which at most GATE_LOSS of the matched candidates lie."""
    got = np.sort(rows.cosine[rows.matched])
    if not len(got):
        return GATE
    return round(float(max(GATE, got[int(np.floor(GATE_LOSS * len(got)))])), 3)


def precision_cut(y: np.ndarray, p: np.ndarray, passed: np.ndarray) -> float:
    """The lowest cut on `p` whose kept rows (among those the gate passes) are right at least
    PRECISION of the time, keeping MIN_KEPT; the most precise one when none is."""
    order = np.argsort(-np.where(passed, p, -1.0))
    order = order[passed[order]]
    hits = np.cumsum(y[order])
    kept = np.arange(1, len(order) + 1)
    prec = hits / kept
    ok = np.where((prec >= PRECISION) & (kept >= MIN_KEPT))[0]
    i = int(ok.max()) if len(ok) else int(np.argmax(np.where(kept >= MIN_KEPT, prec, -1)))
    return round(float(p[order][i]), 4)


def report(rows: Rows, decision: MiningDecision, stance_side: float, claims) -> dict[str, Any]:
    """What the decision shows on `rows`: how many candidates it keeps and how many of those make
    a gold point (arguments), the matched ones' side accuracy (all, and past the side margin),
    and the share of the claims' gold clusters it recovers as arguments (per claim, averaged),
    and with the side shown right."""
    shown = (decision.argument.prob(rows.features) >= decision.cut) & (
        rows.cosine >= decision.min_similarity
    )
    m = rows.matched
    right_side = sides_right(rows, stance_side)
    sided = np.abs(rows.support - stance_side) >= decision.side_margin
    n = int(shown.sum())
    recovered, recovered_sided = [], []
    for ci, claim in enumerate(claims):
        mine = (rows.claim == ci) & shown & m
        recovered.append(len({int(g) for g in rows.cluster[mine]}) / max(1, len(claim.clusters)))
        got = {int(g) for g in rows.cluster[mine & sided & right_side]}
        recovered_sided.append(len(got) / max(1, len(claim.clusters)))

    def rate(a, b) -> float:
        return round(float(a.sum() / max(1, b.sum())), 4)

    return {
        "claims": len(claims),
        "candidates": len(rows.side),
        "matched": int(m.sum()),
        "shown": n,
        "arguments_precision": rate(m & shown, shown),
        "side_accuracy_matched": rate(m & right_side, m),
        "side_accuracy_matched_trunk_alone": rate(m & ((rows.raw >= 0.5) == (rows.side == 1)), m),
        "sided_share_shown_matched": rate(m & shown & sided, m & shown),
        "side_accuracy_sided_shown_matched": rate(
            m & shown & sided & right_side, m & shown & sided
        ),
        "clusters_recovered_as_arguments": round(float(np.mean(recovered or [0.0])), 4),
        "clusters_recovered_sided_right": round(float(np.mean(recovered_sided or [0.0])), 4),
    }


def write(folder: Path, decision: MiningDecision, fitted: dict[str, Any]) -> None:
    """Into a bundle entry's manifest (`decisions.mining`), and its checksum restamped."""
    man_path = folder / "manifest.json"
    man = json.loads(man_path.read_text())
    man.setdefault("decisions", {})["mining"] = {**decision.to_json(), "fitted": fitted}
    man_path.write_text(json.dumps(man, indent=2) + "\n")
    bundle_path = folder / MANIFEST
    if bundle_path.is_file():
        b = json.loads(bundle_path.read_text())
        b["files"]["manifest.json"] = sha256_file(man_path)
        bundle_path.write_text(json.dumps(b, indent=1) + "\n")


INDEX = "mining"
CLAIMDIFF_ARTICLES = "claimdiff_train_articles.jsonl"


def evidence_articles(data: Path) -> list[dict[str, Any]]:
    """The evidence paragraphs as articles of the documents pool: id, a title (the first words),
    the debate site as outlet."""
    rows = json.loads(Path(evidence_pool_file(data)).read_text())  # type: ignore[arg-type]
    return [
        {"id": f"ev{r['eId']}", "title": " ".join(r["text"].split()[:8]),
         "outlet": r.get("source"), "text": r["text"]}
        for r in sorted(rows, key=lambda r: int(r["eId"]))
    ]  # fmt: skip


def scratch_index(
    home: Path, data: Path, claimdiff: Path | None, retrievers: tuple[str, ...], inputs: dict, log
) -> Searcher:
    """The index the decision is fitted on, in `home`: the perspective pool, the evidence
    paragraphs as documents and ClaimDiff's articles (mostly reporting) as news, with
    `retrievers` and the relation model's states. Kept: a later run with the same `inputs`
    (models and data checksums) reads it instead of building it again (about 20 min here)."""
    import shutil

    marker = home / "inputs.json"
    if marker.is_file() and json.loads(marker.read_text()) == inputs:
        log(f"mining: the index of these inputs is in {home}, kept from an earlier run")
        return Searcher(INDEX, home=home)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    docs = home / "evidence_documents.jsonl"
    docs.write_text("".join(json.dumps(r) + "\n" for r in evidence_articles(data)))
    srcs = [Source("perspectives", data / PERSPECTIVES)]
    news = claimdiff / CLAIMDIFF_ARTICLES if claimdiff is not None else None
    if news is not None and news.is_file():
        srcs.append(Source("news", news))
    log(f"mining: building the index it is fitted on in {home} (perspectives, news)")
    ix = Indexer(INDEX, home=home, config=IndexConfig(retrievers, links=False))
    ix.build(srcs)
    log("mining: adding the evidence paragraphs as documents")
    ix.add([Source("documents", docs)])
    marker.write_text(json.dumps(inputs, indent=1) + "\n")
    return Searcher(INDEX, home=home)


def fit_entry(
    folder: Path,
    data: Path,
    root: Path,
    claimdiff: Path | None,
    retrievers: tuple[str, ...],
    log=print,
) -> dict[str, Any]:
    """The `make models` step: fit the decision for the pair model in `folder` (the bundle in
    `root`) and write it into its manifest; returns what `main` prints."""
    entries = ("dense", "colbert", "relation", "equivalence")
    inputs = {
        "data": data_fingerprints(data),
        "claimdiff": sha256_file(claimdiff / CLAIMDIFF_ARTICLES)
        if claimdiff is not None and (claimdiff / CLAIMDIFF_ARTICLES).is_file()
        else None,
        "retrievers": list(retrievers),
        "models": {e: sha256_file(root / e / MANIFEST) for e in entries if (root / e).is_dir()},
    }
    home = paths.cache_dir() / "mining-index"
    searcher = scratch_index(home, data, claimdiff, retrievers, inputs, log)
    engine = Engine.load(searcher, folder, config=EngineConfig())
    rows = home / f"rows-{_pair_key(folder)}"
    out = fit_and_report(engine, data, rows, log)
    write(folder, MiningDecision.from_json(out["decision"]), {k: out[k] for k in FITTED})
    return out


FITTED = ("tune", "dev", "match")


def _pair_key(folder: Path) -> str:
    """The pair model's manifest less what the rows do not read of it: its decisions (which
    this step writes), its cuts and tune metrics (the `unclear` and `verdict` steps' refits) and
    the reasons' reader it names."""
    import hashlib

    man = json.loads((folder / "manifest.json").read_text())
    for key in ("decisions", "thresholds", "tune_metrics", "reason_reader"):
        man.pop(key, None)
    return hashlib.sha256(json.dumps(man, sort_keys=True).encode()).hexdigest()[:12]


def fit_and_report(engine: Engine, data: Path, rows: Path | None, log=print) -> dict[str, Any]:
    """Collect (or read the cached) labelled candidates of the tune and dev claims, fit on tune,
    report both."""
    stance_side = engine.decisions.stance_side
    persp = load_perspectives(data)
    tune = tune_claims_of(data)[0]
    dev = load_claims(data, "dev")
    out: dict[str, Any] = {"match": MATCH, "precision_target": PRECISION}
    got = {}
    for name, claims in (("tune", tune), ("dev", dev)):
        cache = rows.with_name(f"{rows.name}-{name}.pkl") if rows else None
        if cache is not None and cache.is_file():
            got[name] = pickle.loads(cache.read_bytes())  # a cache this module wrote
            continue
        log(f"mining: labelling the candidates of {len(claims)} {name} claims")
        got[name] = collect(engine, claims, persp, log)
        if cache is not None:
            cache.write_bytes(pickle.dumps(got[name]))
    claims_of = {"tune": tune, "dev": dev}
    got = {n: with_support(engine, r, claims_of[n]) for n, r in got.items()}
    decision = fit(got["tune"], stance_side)
    for name, claims in (("tune", tune), ("dev", dev)):
        out[name] = report(got[name], decision, stance_side, claims)
    out["decision"] = decision.to_json()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default=None, help="an index whose documents are the evidence "
                    "(default: the scratch index, built in the cache when missing)")  # fmt: skip
    ap.add_argument("--home", default=None)
    ap.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    ap.add_argument("--claimdiff", type=Path, default=Path("data/claimdiff"))
    ap.add_argument("--pair", type=Path, default=Path("models/pair"))
    ap.add_argument("--write", action="store_true", help="write it into --pair's manifest")
    ap.add_argument(
        "--rows", type=Path, default=None, help="cache the labelled rows (PATH-tune.pkl, ...)"
    )
    args = ap.parse_args()
    if args.index is None and args.write:
        out = fit_entry(args.pair, args.data, args.pair.parent, args.claimdiff,
                        ("bm25", "dense", "colbert"))  # fmt: skip
    else:
        searcher = Searcher(args.index or INDEX, args.home or paths.cache_dir() / "mining-index")
        engine = Engine.load(searcher, args.pair, config=EngineConfig())
        out = fit_and_report(engine, args.data, args.rows)
        if args.write:
            write(args.pair, MiningDecision.from_json(out["decision"]),
                  {k: out[k] for k in FITTED})  # fmt: skip
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
