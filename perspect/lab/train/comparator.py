"""Training the ClaimDiff comparator (perspect.reranker.comparator): the loop and its examples.

One phase on ClaimDiff's fit topics, plus unrelated in-topic pairs labelled neither so the model
meets the distribution of a news stream. (An intermediate NLI-like phase, VitaminC or PERSPECTRUM
stance pairs, was measured and did not help: bench/STUDIES.md.) Weaken is rare (10 % of ClaimDiff train): the
relation loss weighs each class by the square root of its inverse frequency, and the decision
thresholds are fitted afterwards on held-out topics (perspect.lab.claimdiff), which is where the
imbalance is really settled. The rationale head learns from ClaimDiff's positive pairs only.

With `inference` rows (the joint reader, issue 41), the same phase also trains the inference head
on the held-in pairs of ../shared/data/inference (perspect.lab.train.relation_data: held out by
premise, as the relation model's), one task per batch: the adapters learn to read two texts
together for both questions.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from perspect.core.datasets.claimdiff import RELATIONS, ClaimPair, rationale_spans
from perspect.core.progress import NullReporter, Reporter
from perspect.lab.train.pair import length_bucketed_batches
from perspect.reranker.comparator import Comparator


@dataclass(frozen=True)
class CmpExample:
    a: str
    b: str
    label: int  # index into RELATIONS
    spans: tuple[tuple[int, int], ...] = ()  # rationale character spans in `a`
    rationale: bool = False  # whether the token head learns from this example
    task: str = "claimdiff"  # or "nli": `label` indexes comparator_net.NLI_LABELS


def inference_examples(rows) -> list[CmpExample]:
    """Inference rows ("nli", premise, hypothesis, label, source) as examples of the nli head."""
    return [CmpExample(r[1], r[2], int(r[3]), task="nli") for r in rows]


@dataclass(frozen=True)
class Phase:
    name: str
    epochs: float
    lr: float
    max_minutes: float
    rationale_weight: float = 0.0
    batch_size: int = 16
    warmup: float = 0.06


def claimdiff_examples(pairs: Sequence[ClaimPair]) -> list[CmpExample]:
    out = []
    for p in pairs:
        spans = tuple(rationale_spans(p.claim_a, p.rationale))
        out.append(
            CmpExample(p.claim_a, p.claim_b, RELATIONS.index(p.relation), spans, bool(spans))
        )
    return out


def class_weights(examples: Sequence[CmpExample]) -> torch.Tensor:
    labels = [e.label for e in examples if e.task == "claimdiff"]
    counts = np.bincount(labels, minlength=len(RELATIONS)).astype(float)
    counts = np.maximum(counts, 1.0)
    return torch.tensor(np.sqrt(counts.sum() / (len(RELATIONS) * counts)), dtype=torch.float32)


def token_labels(enc, offsets, batch: Sequence[CmpExample]) -> torch.Tensor:
    """1 for wordpieces of A inside a rationale span, 0 for A's others, -1 (ignored) elsewhere."""
    lab = torch.full(enc["input_ids"].shape, -1.0)
    for row, ex in enumerate(batch):
        if not ex.rationale:
            continue
        for t, sid in enumerate(enc.sequence_ids(row)):
            s, e = int(offsets[row, t, 0]), int(offsets[row, t, 1])
            if sid != 0 or e <= s:
                continue
            lab[row, t] = float(any(s < se and e > ss for ss, se in ex.spans))
    return lab


def train_phase(
    model: Comparator,
    examples: Sequence[CmpExample],
    phase: Phase,
    seed: int = 13,
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """One phase: AdamW on the adapters and heads, linear warm-up and decay on max(step fraction,
    wall-clock fraction) so a slow machine ends on time."""
    reporter = reporter or NullReporter()
    rng = random.Random(seed)
    n_epochs = max(1, int(np.ceil(phase.epochs)))
    batches = []
    tasks = sorted({e.task for e in examples})
    for _ in range(n_epochs):
        epoch = [  # one task per batch: each head's loss over its own rows
            b
            for t in tasks
            for b in length_bucketed_batches(
                [e for e in examples if e.task == t], phase.batch_size, rng
            )
        ]
        rng.shuffle(epoch)  # buckets come out short to long: mix them
        batches += epoch
    batches = batches[: max(1, round(phase.epochs * len(examples) / phase.batch_size))]
    net = model.net
    net.train()
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=phase.lr, weight_decay=0.01)
    weights = class_weights(examples)
    budget = phase.max_minutes * 60
    t0 = time.perf_counter()
    losses: list[float] = []
    done = 0
    with reporter.stage(f"training the comparator: {phase.name}", total=len(batches)) as adv:
        for step, batch in enumerate(batches):
            frac = max(step / len(batches), (time.perf_counter() - t0) / budget)
            if frac >= 1.0:
                log(f"{phase.name}: time budget reached after {step}/{len(batches)} batches")
                break
            scale = frac / phase.warmup if frac < phase.warmup else (1 - frac) / (1 - phase.warmup)
            for g in opt.param_groups:
                g["lr"] = phase.lr * max(0.0, scale)
            enc = model.encode([(e.a, e.b) for e in batch], offsets=True)
            offsets = enc.pop("offset_mapping")
            rel, tag, *nli = net(enc)
            y = torch.tensor([e.label for e in batch])
            if batch[0].task == "nli":
                loss = torch.nn.functional.cross_entropy(nli[0], y)
            else:
                loss = torch.nn.functional.cross_entropy(rel, y, weight=weights)
            if phase.rationale_weight and any(e.rationale for e in batch):
                lab = token_labels(enc, offsets, batch)
                keep = lab >= 0
                if keep.any():
                    loss = loss + phase.rationale_weight * (
                        torch.nn.functional.binary_cross_entropy_with_logits(tag[keep], lab[keep])
                    )
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
            done += 1
            adv(1)
    net.eval()
    return {
        "phase": phase.name,
        "examples": len(examples),
        "batches_planned": len(batches),
        "batches_done": done,
        "seconds": round(time.perf_counter() - t0, 1),
        "final_loss": round(float(np.mean(losses[-50:])), 4) if losses else None,
    }
