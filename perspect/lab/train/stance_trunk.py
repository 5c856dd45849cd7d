"""Trains the stance trunk (perspect.reranker.stance_net): LoRA adapters on all-mpnet-base-v2's
top 3 layers, decomposed, a VitaminC phase then PERSPECTRUM stance (+ relevance as a helper task).

Why this recipe: issue 33's study (bench/STUDIES.md). The frozen lower layers' outputs never
change, so they are computed once per text (bf16, in memory) and only the adapters and heads train
over them, batched by length: on 2 cores the VitaminC phase is ~20 min instead of hours.
Fitted on PERSPECTRUM's fit claims (train minus the 15 % tune claims); the side cut on tune; dev
only reports. Run: python -m perspect.lab.train.stance_trunk --out DIR [--seed N].
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import f1_score, roc_auc_score
from torch import nn

from perspect.core import paths
from perspect.core.datasets.negation import negate
from perspect.core.datasets.perspectrum import (
    data_fingerprints,
    load_claims,
    load_perspectives,
    tune_claims_of,
)
from perspect.core.index.stance_states import dequantize, quantize
from perspect.core.model import bundle, precision
from perspect.lab.train.pair_data import build_examples
from perspect.reranker import stance_net

VC_LABELS = {"SUPPORTS": 0, "REFUTES": 1, "NOT ENOUGH INFO": 2}
MAX_LENGTH = {"perspectrum": 40, "vitaminc": 80}  # wordpieces per text (p99 of claims/perspectives)


class States:
    """Lower-layer states per text, computed once (bf16, unpadded)."""

    def __init__(self, tok, net: stance_net.DecomposedNet, max_length: int):
        self.tok, self.net, self.max_length = tok, net, max_length
        self.cache: dict[str, torch.Tensor] = {}

    def need(self, texts, log: Callable[[str], None], batch: int = 64) -> None:
        todo = sorted({t for t in texts if t not in self.cache}, key=len)
        t0 = time.perf_counter()
        for s in range(0, len(todo), batch):
            chunk = todo[s : s + batch]
            enc = self.tok(
                chunk,
                truncation=True,
                max_length=self.max_length,
                padding=True,
                return_tensors="pt",
            )
            with precision.cpu_autocast():
                h = self.net.lower(enc["input_ids"], enc["attention_mask"])
            h = h.to(torch.bfloat16)
            for i, t in enumerate(chunk):
                self.cache[t] = h[i, : int(enc["attention_mask"][i].sum())].clone()
            if (s // batch) % 100 == 0:
                log(
                    f"  lower states {s + len(chunk)}/{len(todo)} ({time.perf_counter() - t0:.0f} s)"
                )

    def seq(self, a: str, b: str) -> torch.Tensor:
        return torch.cat([self.cache[a], self.cache[b]])


def batches_by_length(rows, st, size: int, rng: random.Random):
    """Shuffled batches of rows of about one length (sorted within windows of 50 batches): the
    padding of a batch is what a CPU step wastes."""
    rows = list(rows)
    rng.shuffle(rows)
    out = []
    for s in range(0, len(rows), size * 50):
        part = sorted(rows[s : s + size * 50], key=lambda r: len(st.seq(r[1], r[2])))
        out += [part[i : i + size] for i in range(0, len(part), size)]
    rng.shuffle(out)
    return out


def train(
    net,
    tasks: dict,
    epochs: float,
    lr: float,
    log,
    seed: int,
    batch: int = 32,
    body: list | None = None,
    head_lr: float = 5.0,
    bf16: bool = True,
) -> dict:
    """tasks: name -> (rows (task, a, b, label), States). BCE for 1-logit heads, else CE.
    `body`: the trained parameters below the heads (default: the encoder's trainable ones, the
    adapters), at `lr`; the heads at `lr * head_lr`. Warm-up 6 %, then linear decay."""
    rng = random.Random(seed)
    plan = []
    for _ in range(int(np.ceil(epochs))):
        for task, (rows, st) in tasks.items():
            plan += [(task, st, b) for b in batches_by_length(rows, st, batch, rng)]
    rng.shuffle(plan)
    total = sum(len(r) for r, _ in tasks.values())
    plan = plan[: round(epochs * total / batch)]
    if body is None:
        body = [p for p in net.encoder.parameters() if p.requires_grad]
    groups = [
        {"params": body, "lr": lr},
        {"params": list(net.heads.parameters()), "lr": lr * head_lr},
    ]
    opt = torch.optim.AdamW(groups, weight_decay=0.01)
    net.train()
    t0, losses, pairs = time.perf_counter(), [], 0
    for step, (task, st, b) in enumerate(plan):
        frac = step / len(plan)
        scale = frac / 0.06 if frac < 0.06 else (1 - frac) / 0.94
        for g, base in zip(opt.param_groups, (lr, lr * head_lr), strict=True):
            g["lr"] = base * scale
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = net([st.seq(a, bb) for _, a, bb, _ in b], task)
        if logits.shape[-1] == 1:
            y = torch.tensor([r[3] for r in b], dtype=torch.float32)
            loss = nn.functional.binary_cross_entropy_with_logits(logits.squeeze(-1), y)
        else:
            loss = nn.functional.cross_entropy(logits, torch.tensor([int(r[3]) for r in b]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(body + list(net.heads.parameters()), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        pairs += len(b)
        if step % 100 == 0:
            el = time.perf_counter() - t0
            log(
                f"  step {step}/{len(plan)} loss {np.mean(losses[-100:]):.4f} "
                f"({pairs / max(el, 1e-9):.0f} pairs/s, {el / 60:.1f} min)"
            )
    net.eval()
    return {
        "steps": len(plan),
        "pairs": pairs,
        "seconds": round(time.perf_counter() - t0, 1),
        "final_loss": round(float(np.mean(losses[-100:])), 4),
    }


@torch.no_grad()
def predict(net, st, pairs, task: str, batch: int = 128, bf16: bool = True) -> np.ndarray:
    order = sorted(range(len(pairs)), key=lambda i: len(st.seq(*pairs[i])))
    out = [None] * len(pairs)
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            lg = net([st.seq(*pairs[i]) for i in idx], task)
        p = torch.sigmoid(lg.squeeze(-1)) if lg.shape[-1] == 1 else torch.softmax(lg, -1)
        for j, i in enumerate(idx):
            out[i] = p[j].numpy()
    return np.array(out)


def macro_cut(y: np.ndarray, p: np.ndarray) -> float:
    cuts = np.quantile(p, np.linspace(0.05, 0.95, 91))
    return float(max(cuts, key=lambda c: f1_score(y, p >= c, average="macro")))


def stance_metrics(cut: float, y: np.ndarray, p: np.ndarray, p_neg: np.ndarray) -> dict:
    side, neg = p >= cut, p_neg >= cut
    return {
        "auroc": round(100 * roc_auc_score(y, p), 2),
        "accuracy": round(100 * float((side == y.astype(bool)).mean()), 2),
        "macro_f1": round(100 * f1_score(y, side, average="macro"), 2),
        "flip": round(100 * float((side != neg).mean()), 2),
        "auroc_negated": round(100 * roc_auc_score(1 - y, p_neg), 2),
    }


def perspectrum_rows(data: Path, searcher, log, limit: int | None = None):
    persp = load_perspectives(data)
    tune, fit = tune_claims_of(data)
    dev = load_claims(data, "dev")
    if limit:
        tune, fit, dev = tune[: limit // 2], fit[:limit], dev[: limit // 2]
    rng = random.Random(13)
    ex = build_examples(
        fit, persp, {}, searcher, rng, ("relevance", "stance"), contrast_stance=True
    )
    rel = ex["relevance"]
    rng.shuffle(rel)
    rows = {
        "relevance": [("relevance", e.a, e.b, e.label) for e in rel[:8000]],
        "stance": [("stance", e.a, e.b, e.label) for e in ex["stance"]],
    }
    log(f"fit: {len(fit)} claims, relevance {len(rows['relevance'])}, stance {len(rows['stance'])}")

    def gold(claims):
        return [
            (c.text, negate(c.text), persp[p], float(cl.stance == "SUPPORT"))
            for c in claims
            for cl in c.clusters
            for p in cl.pids
            if p in persp
        ]

    return rows, {"tune": gold(tune), "dev": gold(dev)}


def vitaminc_rows(path: Path, limit: int | None = None):
    """(train, held-out): one page in ten (by hash) held out, so no page is in both."""
    train_rows, held = [], []
    for line in path.open():
        r = json.loads(line)
        row = ("vitaminc", r["claim"], r["evidence"], VC_LABELS[r["label"]])
        h = int(hashlib.md5(r["page"].encode()).hexdigest(), 16) % 10
        (held if h == 0 else train_rows).append(row)
    return (train_rows[:limit], held[: limit // 3]) if limit else (train_rows, held)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def run(args, log, searcher=None) -> dict:
    """Train, evaluate, save into args.out. `searcher`: the index relevance negatives are mined
    from (default: the index args.index)."""
    from peft import get_peft_model

    torch.manual_seed(args.seed)
    base = paths.resolve_base(args.base)
    tok, enc = stance_net.load_base(base)
    n_layers = enc.config.num_hidden_layers
    cfg = stance_net.lora_config(n_layers, args.top, args.rank, args.alpha)
    peft_model = get_peft_model(enc, cfg)
    net = stance_net.DecomposedNet(enc, args.top, {"vitaminc": 3, "relevance": 1, "stance": 1})
    t_all = time.perf_counter()
    res: dict = {"seed": args.seed, "top": args.top, "rank": args.rank, "alpha": args.alpha}
    if args.vitaminc:
        vc, held = vitaminc_rows(args.vitaminc_file, args.limit)
        vst = States(tok, net, MAX_LENGTH["vitaminc"])
        t0 = time.perf_counter()
        vst.need([t for r in vc + held for t in (r[1], r[2])], log)
        res["vitaminc_lower_seconds"] = round(time.perf_counter() - t0, 1)
        res["vitaminc_train"] = train(
            net, {"vitaminc": (vc, vst)}, args.vitaminc, args.lr, log, args.seed
        )
        pv = predict(net, vst, [(r[1], r[2]) for r in held], "vitaminc")
        yv = np.array([r[3] for r in held])
        res["vitaminc_heldout_accuracy"] = round(100 * float((pv.argmax(1) == yv).mean()), 2)
        log(json.dumps(res))
        del vst
    if searcher is None:
        from perspect.retriever.searcher import Searcher

        own = Searcher(args.index, home=args.home)
        try:
            rows, ev = perspectrum_rows(args.data, own, log, args.limit)
        finally:
            own.close()
        res["negatives"] = f"index {args.index} ({'+'.join(own.retrievers)})"
    else:
        rows, ev = perspectrum_rows(args.data, searcher, log, args.limit)
        res["negatives"] = f"scratch index ({'+'.join(searcher.retrievers)})"
    st = States(tok, net, MAX_LENGTH["perspectrum"])
    texts = [t for rs in rows.values() for r in rs for t in (r[1], r[2])]
    texts += [t for k in ("tune", "dev") for c, n, p, _ in ev[k] for t in (c, n, p)]
    t0 = time.perf_counter()
    st.need(texts, log)
    res["perspectrum_lower_seconds"] = round(time.perf_counter() - t0, 1)
    res["train"] = train(
        net, {k: (v, st) for k, v in rows.items()}, args.epochs, args.lr, log, args.seed
    )

    def sp(rows_, neg=False):
        return predict(net, st, [(n if neg else c, p) for c, n, p, _ in rows_], "stance")

    y_t = np.array([r[3] for r in ev["tune"]])
    y_d = np.array([r[3] for r in ev["dev"]])
    cut = macro_cut(y_t, sp(ev["tune"]))
    res["cut"] = round(cut, 4)
    res["dev"] = stance_metrics(cut, y_d, sp(ev["dev"]), sp(ev["dev"], True))
    # as served: the perspective's states stored int8 in the index, the claim's computed in bf16
    for t in {p for _, _, p, _ in ev["dev"]}:
        q, scale = quantize(st.cache[t].float().numpy())
        st.cache[t] = torch.from_numpy(dequantize(q, scale)).to(torch.bfloat16)
    res["dev_int8_states"] = stance_metrics(cut, y_d, sp(ev["dev"]), sp(ev["dev"], True))
    res["seconds"] = round(time.perf_counter() - t_all, 1)
    log(json.dumps(res))
    save(args.out, peft_model, net, res, base, args)
    return res


def save(out: Path, peft_model, net, res: dict, base: str, args) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    peft_model.peft_config["default"].base_model_name_or_path = paths.HUB_MPNET  # not a local path
    peft_model.save_pretrained(str(out / "adapter"), save_embedding_layers=False)
    heads = {
        f"{k}.{n}": v.detach().float().contiguous()
        for k in ("stance",)
        for n, v in net.heads[k].state_dict().items()
    }
    save_file(heads, str(out / "heads.safetensors"))
    manifest = {
        "format": "perspect.stancetrunk/1",
        "base_model": {
            "name": args.base,
            "sha256": sha256(Path(base) / "model.safetensors"),
        },
        "n_top": args.top,
        "max_length": MAX_LENGTH["perspectrum"],
        "adapter": {"rank": args.rank, "alpha": args.alpha, "targets": stance_net.ADAPTER_TARGETS},
        "data": [
            *data_fingerprints(args.data),
            *(
                [{"file": args.vitaminc_file.name, "sha256": sha256(args.vitaminc_file)}]
                if args.vitaminc
                else []
            ),
        ],
        "code": bundle.code_version(),
        "training": {k: v for k, v in res.items() if k not in ("dev", "dev_int8_states", "cut")},
        "cut": res["cut"],
        "dev_metrics": {"stance": res["dev"], "stance_int8_states": res["dev_int8_states"]},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def pack(full: Path, out: Path) -> None:
    """The trained folder as a bundle entry: adapter, head and manifest, checked against the
    base's sha256 (perspect.core.model.bundle)."""
    man = json.loads((full / "manifest.json").read_text())
    keep = ("base_model", "code", "data", "training", "dev_metrics", "created")
    record = {k: man[k] for k in keep if k in man}
    base_id = man["base_model"]["name"]
    bundle.pack(full, out, name=out.name, role="stance", base_id=base_id, record=record)


def train_entry(data: Path, folder: Path, log, **options) -> dict:
    """`make models` step "stance-trunk": train in a scratch folder, then pack into `folder`."""
    import tempfile

    defaults = vars(parser().parse_args(["--out", "unused"]))
    args = argparse.Namespace(**{**defaults, **options, "data": Path(data)})
    from perspect.core.index.config import default_retrievers
    from perspect.lab.pools import pool_searcher

    with tempfile.TemporaryDirectory(prefix="perspect-stance-") as tmp:
        args.out = Path(tmp) / "trunk"
        retrievers = default_retrievers()  # as make demo's index: the same negatives
        searcher = pool_searcher(data, Path(tmp) / "index", retrievers=retrievers, links=False)
        try:
            res = run(args, log, searcher)
        finally:
            searcher.close()
        pack(args.out, Path(folder))
    return res


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--base", default=paths.PACKAGED_MPNET)
    ap.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    ap.add_argument(
        "--vitaminc-file",
        type=Path,
        default=Path("../shared/data/vitaminc/vitaminc_real_shared.jsonl"),
    )
    ap.add_argument("--index", default="default", help="index whose retrievers mine negatives")
    ap.add_argument("--home", default="indexes")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--rank", type=int, default=32)
    ap.add_argument("--alpha", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--vitaminc", type=float, default=1.0, help="epochs of the VitaminC phase")
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--limit", type=int, default=None, help="a few rows of each set (smoke)")
    ap.add_argument("--pack", type=Path, default=None, help="then pack --out into this entry")
    return ap


def main() -> None:
    args = parser().parse_args()
    torch.set_num_threads(2)
    args.out.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        with (args.out / "train.log").open("a") as f:
            f.write(line + "\n")

    run(args, log)
    if args.pack is not None:
        pack(args.out, args.pack)


if __name__ == "__main__":
    main()
