"""Does a fact-verification cross-encoder trained on VitaminC lift T4? Trains one and measures it.

    python bench/vitaminc_ce.py [--minutes 20] [--model models/pair] [--index default]
    python bench/vitaminc_ce.py --load DIR          # reuse a saved verifier, skip training

VitaminC (Schuster et al. 2021) pairs a claim with one Wikipedia sentence, labelled SUPPORTS,
REFUTES or NOT ENOUGH INFO, and its contrastive pairs differ in a few words, so a model must read
the evidence, not guess from the claim. The shared file holds 60 % of the real test pages. This
script splits those by page (90 % train, 10 % held out, so no page is on both sides), trains a
3-way sentence-transformers CrossEncoder from the packaged all-MiniLM-L6-v2 under a wall-clock
budget, and reports held-out accuracy and macro F1 beside the majority-class baseline.

Then T4: every link of every tune and dev cluster is split into sentences (sentencex, as the news
pool is), each (perspective, sentence) pair is scored, and the link gets two values:
`vc_sup`, the highest P(SUPPORTS) over its sentences, and `vc_info`, the highest
1 - P(NOT ENOUGH INFO) (a paragraph that refutes a perspective still argues about it). Each takes
the evidence stack's fourth slot; stack and rule are re-fitted on the tune claims, and dev T4 is
printed beside the shipped stack, computed in the same run (bench/evidence_signals.py's harness).

Measured (2026-11-22, eighth session; slow VM, a 10^7-step Python loop took 2.9 s): 30 minutes of
training ran 411 steps of 32 pairs (0.69 epoch of 19,144 pairs, 128 tokens); the logged loss went
1.07 -> 0.90 (mean 0.965). Held out (2,021 pairs of 169 pages): accuracy 55.4 against 50.2 for
the majority class, macro F1 39.3, 47 pairs/s. T4, 3 links, tune / dev F1 (dev P / R):

| evidence stack | tune | dev |
|---|---|---|
| shipped (rrf + cos + rmargin) | 51.0 | 52.1 (51.9 / 52.3) |
| vc_sup alone | 42.7 | 44.4 |
| shipped + vc_sup | 51.6 | 51.5 |
| vc_info alone | 44.0 | 44.1 |
| shipped + vc_info | 51.4 | 52.2 |

Trained on for one more epoch (`--base models/verdict-vitaminc --minutes 45 --lr 3e-5`: 599 steps,
41 min, mean loss 0.825), held out: accuracy 56.2, macro F1 52.4. T4 tune / dev: vc_sup alone 43.9
/ 45.3, shipped + vc_sup 51.7 / 52.1; vc_info alone 44.0 / 45.4, shipped + vc_info 51.8 / 52.0
(shipped 51.0 / 52.1 in the same run).

No gain: the verifier ranks the links worse than the shipped stack does, and adding it moves dev by
-0.6 to +0.1 after 0.7 epoch and by 0.0 to -0.1 after 1.7. Scoring took 6 minutes for the 852
tune and dev clusters (12 sentences at most per paragraph). The verifier is still weak after 1.7
epochs. But the in-domain evidence cross-encoder (bench/evidence_ce.py), which did learn, also added
nothing on dev. Not in the pipeline.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
DATA = ROOT.parent / "shared" / "data"


def load_vitaminc(path: Path, held_share: float = 0.1, seed: int = 13):
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    pages = sorted({r["page"] for r in rows})
    random.Random(seed).shuffle(pages)
    held = set(pages[: int(len(pages) * held_share)])
    out = {"train": [], "held": []}
    for r in rows:
        out["held" if r["page"] in held else "train"].append(
            (r["claim"], r["evidence"], LABELS.index(r["label"]))
        )
    return out


def train(rows, base: str, tmp: str, minutes: float, max_length: int, lr: float, epochs: int):
    from reranker.st_training import train_cross_encoder

    model, trainer, res = train_cross_encoder(
        rows,
        base,
        tmp,
        max_length=max_length,
        batch_size=32,
        lr=lr,
        epochs=epochs,
        max_seconds=minutes * 60,
        num_labels=len(LABELS),
    )
    return model, trainer.state.global_step, float(res.training_loss)


def probs(model, pairs, batch_size: int = 64) -> np.ndarray:
    if not pairs:
        return np.zeros((0, 3), dtype=np.float32)
    import torch

    out = model.predict(
        pairs,
        batch_size=batch_size,
        activation_fn=torch.nn.Softmax(dim=-1),
        show_progress_bar=False,
    )
    return np.asarray(out, dtype=np.float32)


def held_out_report(model, held) -> tuple[float, float, float, float]:
    """(accuracy, macro F1, majority accuracy, pairs/s) on the held-out pages."""
    t = time.perf_counter()
    p = probs(model, [(a, b) for a, b, _ in held])
    rate = len(held) / (time.perf_counter() - t)
    pred, gold = p.argmax(1), np.array([y for *_, y in held])
    f1s = []
    for k in range(3):
        tp = int(((pred == k) & (gold == k)).sum())
        prec, rec = tp / max(1, (pred == k).sum()), tp / max(1, (gold == k).sum())
        f1s.append(0.0 if tp == 0 else 2 * prec * rec / (prec + rec))
    majority = np.bincount(gold, minlength=3).max() / len(gold)
    return float((pred == gold).mean()), float(np.mean(f1s)), float(majority), rate


class VerdictSignals:
    """T4 rows of evidence_signals.Signals with a VitaminC value appended to each link."""

    def __init__(self, sig, model):
        self.sig, self.model = sig, model
        self._cache: dict[tuple[str, int], np.ndarray] = {}

    def link_probs(self, persp_text: str, eid: int) -> np.ndarray:
        key = (persp_text, eid)
        if key not in self._cache:
            from indexer.news import split_sentences

            sents = split_sentences(self.sig.evidence[eid])[:12] or [self.sig.evidence[eid][:500]]
            self._cache[key] = probs(self.model, [(persp_text, s) for s in sents])
        return self._cache[key]

    def rows(self, claims, value: str):
        persp = self.sig.persp
        out = []
        for c in claims:
            for gold, links, mem, rep in self.sig.clusters(c):
                text = persp[int(rep or mem[0])] if (rep or mem) else ""
                vals = []
                for x in links:
                    p = self.link_probs(text, x[0])
                    vals.append(float(p[:, 0].max() if value == "vc_sup" else (1 - p[:, 2]).max()))
                out.append((gold, [(*x, v) for x, v in zip(links, vals, strict=True)]))
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DATA / "perspectrum"))
    ap.add_argument("--vitaminc", default=str(DATA / "vitaminc" / "vitaminc_real_shared.jsonl"))
    ap.add_argument("--model", default=str(ROOT / "models" / "pair"))
    ap.add_argument("--index", default="default")
    ap.add_argument("--base", default="all-MiniLM-L6-v2")
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--save", default=None, help="save the trained verifier here")
    ap.add_argument("--load", default=None, help="a verifier saved with --save; skip training")
    ap.add_argument("--links", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="first N claims of each set (smoke)")
    ap.add_argument("--no-t4", action="store_true", help="held-out VitaminC numbers only")
    args = ap.parse_args()
    vpath, pdata = Path(args.vitaminc), Path(args.data)
    if not vpath.is_file():
        print(f"skip: no VitaminC data at {vpath}")
        return 0
    from sentence_transformers.cross_encoder import CrossEncoder

    from retriever.dense import resolve_model

    split = load_vitaminc(vpath)
    print(
        f"VitaminC: {len(split['train'])} train / {len(split['held'])} held-out pairs", flush=True
    )
    if args.load:
        model = CrossEncoder(args.load, device="cpu")
    else:
        t = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            model, steps, loss = train(
                split["train"],
                resolve_model(args.base),
                tmp,
                args.minutes,
                args.max_length,
                args.lr,
                args.epochs,
            )
        print(f"trained {steps} steps in {time.perf_counter() - t:.0f} s, loss {loss:.3f}")
        if args.save:
            model.save(args.save)
    acc, mf1, major, rate = held_out_report(model, split["held"])
    print(
        f"held-out pages: accuracy {100 * acc:.1f} (majority class {100 * major:.1f}), "
        f"macro F1 {100 * mf1:.1f}, {rate:.0f} pairs/s",
        flush=True,
    )
    if args.no_t4 or not (pdata / "perspectrum_with_answers_v1.0.json").is_file():
        return 0

    from evidence_signals import BASE, print_rows, setup

    sig, tune, dev = setup(args)
    vs = VerdictSignals(sig, model)
    print("| evidence stack | tune T4 F1 | dev T4 P / R / F1 | rule |\n|---|---|---|---|")
    for i, value in enumerate(("vc_sup", "vc_info")):
        t = time.perf_counter()
        tr, dr = vs.rows(tune, value), vs.rows(dev, value)
        variants = ((BASE, "shipped stack"),) if i == 0 else ()
        alone = (("ce",), f"{value} alone")
        print_rows(tr, dr, (*variants, alone, ((*BASE, "ce"), f"+ {value}")))
        print(f"({value}: rows in {time.perf_counter() - t:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
