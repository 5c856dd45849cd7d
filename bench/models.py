"""Inference speed of the pairwise heads at their real input lengths (pairs/s, warm, this CPU).

    python bench/models.py [--model models/pair] [--data ../shared/data/perspectrum] [--n 256]

Pairs are real PERSPECTRUM dev inputs built with `reranker.roles.pair_for`, so token lengths are
the ones the engine sees. "relevance+stance" is one forward pass feeding both heads; the naive row
runs the two heads as two passes, the cost a two-model design would pay. Each row is measured in
PyTorch and on ONNX Runtime (`PairModel.for_inference`, what the engine uses), in the same run,
and with int8 dynamic quantization (PyTorch), the earlier alternative.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.core.datasets.perspectrum import load_claims, load_evidence, load_perspectives  # noqa: E402
from perspect.reranker.model import PairModel  # noqa: E402
from perspect.reranker.roles import pair_for  # noqa: E402


def rate(model: PairModel, pairs, tasks) -> float:
    """Pairs per second of one forward pass feeding `tasks`' heads."""
    model.predict(pairs[:32], tasks)  # warm-up
    t0 = time.perf_counter()
    model.predict(pairs, tasks)
    return len(pairs) / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT / "models" / "pair"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--n", type=int, default=256)
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "perspective_pool_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {data}")
        return 0
    model = PairModel.load(args.model)
    runtimes = {"pytorch": model, "onnxruntime": model.for_inference(), "int8": model.quantized()}
    if runtimes["onnxruntime"] is model:
        del runtimes["onnxruntime"]  # onnxruntime missing or the export failed (logged)
    P, E = load_perspectives(data), load_evidence(data)
    dev = load_claims(data, "dev")
    rs = [pair_for("relevance", c.text, P[p]) for c in dev for p in sorted(c.pids)][: args.n]
    eq = [
        pair_for("equivalence", c.text, P[a], P[b])
        for c in dev
        for a, b in itertools.combinations(sorted(c.pids), 2)
    ][: args.n]
    ev = [
        pair_for("evidence", c.text, P[cl.pids[0]], E[e])
        for c in dev
        for cl in c.clusters
        for e in cl.evidence
        if e in E
    ][: args.n // 2]
    tok = model.tokenizer
    print(
        "| head(s) | max len | mean tokens | " + " | ".join(f"{r} pairs/s" for r in runtimes) + " |"
    )
    print("|---|---|---|" + "---|" * len(runtimes))
    for name, pairs, tasks, passes in (
        ("relevance+stance (one pass)", rs, ["relevance", "stance"], 1),
        ("relevance, stance (naive: two passes)", rs, ["relevance", "stance"], 2),
        ("equivalence", eq, ["equivalence"], 1),
        ("evidence", ev, ["evidence"], 1),
    ):
        ml = model.manifest["max_length"][tasks[0]]
        lens = [min(ml, len(tok(a, b)["input_ids"])) for a, b in pairs]
        cells = []
        for m in runtimes.values():
            if passes == 1:
                r = rate(m, pairs, tasks)
            else:  # one pass per head: the time per pair adds up
                r = 1 / sum(1 / rate(m, pairs, [t]) for t in tasks)
            cells.append(f"{r:,.0f}")
        print(f"| {name} | {ml} | {sum(lens) / len(lens):.0f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
