"""Trains the relation model: one all-mpnet-base-v2 trunk (LoRA on its top 3 layers, as the stance
trunk) with heads for 3-way inference, claim-perspective stance, perspective equivalence and
ClaimDiff strengthen/weaken, multi-task, warm-started from the shipped stance trunk.

Why one trunk and these tasks (issue 41): every "does text A back text B?" in the product -- sides,
the cited reason, evidence verdicts, news, compare -- is the same question, and none of the
bundle's models had learned inference. The inference pairs (SNLI, MultiNLI with TaxiNLI tags,
counterfactual revisions, Breaking NLI) teach it; stance with negated and double-negated claims,
numeric swaps and equivalence keep it on the product's texts.

Why two forms: the decomposed form (each text alone through the frozen lower 9 layers, joined in
the top 3) is how claim-dependent judgments are served over stored states; the joint form (both
texts through every layer together) may read fine inference better. The same adapters and heads
are trained on batches of both forms, and each is measured on held-out pairs; the frozen lower
layers' outputs are computed once per text (decomposed) or per pair (joint) and cached (bf16).

Held out: inference pairs by premise (md5 % 10 == 0), PERSPECTRUM dev claims (fit on train minus
the tune claims), ClaimDiff dev topics. Run:
python -m perspect.lab.train.relation --out DIR [--minutes N].
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from torch import nn

from perspect.core import paths
from perspect.core.datasets import claimdiff as cd
from perspect.core.datasets.perspectrum import (
    data_fingerprints,
)
from perspect.core.model import bundle, precision
from perspect.lab.train.relation_data import (
    NLI_FILES,
    NLI_LABELS,
    claimdiff_rows,
    inference_rows,
    nli_report,
    numeric_swaps,
    perspectrum_rows,
)
from perspect.lab.train.stance_trunk import (
    States,
    batches_by_length,
    macro_cut,
    sha256,
    stance_metrics,
)
from perspect.reranker import stance_net

HEADS = {"nli": 3, "stance": 1, "equivalence": 1, "claimdiff": 3}
MAX_LENGTH = 64  # wordpieces per text (MultiNLI premises run long; p95 of the mix)


class JointStates(States):
    """Lower-layer states of both texts encoded together (`<s> a </s></s> b </s>`), per pair."""

    def need_pairs(self, pairs, log, batch: int = 64) -> None:
        todo = sorted(
            {p for p in pairs if p not in self.cache}, key=lambda p: len(p[0]) + len(p[1])
        )
        t0 = time.perf_counter()
        for s in range(0, len(todo), batch):
            chunk = todo[s : s + batch]
            enc = self.tok(
                [a for a, _ in chunk],
                [b for _, b in chunk],
                truncation=True,
                max_length=2 * self.max_length,
                padding=True,
                return_tensors="pt",
            )
            with precision.cpu_autocast():
                h = self.net.lower(enc["input_ids"], enc["attention_mask"])
            h = h.to(torch.bfloat16)
            for i, p in enumerate(chunk):
                self.cache[p] = h[i, : int(enc["attention_mask"][i].sum())].clone()
            if (s // batch) % 50 == 0:
                log(
                    f"  joint states {s + len(chunk)}/{len(todo)} ({time.perf_counter() - t0:.0f} s)"
                )

    def seq(self, a: str, b: str) -> torch.Tensor:
        return self.cache[(a, b)]


def train_loop(net, plan, lr: float, log, deadline: float, head_lr: float = 5.0) -> dict:
    """`plan`: [(task, states, rows)] batches in order. Warm-up 6 %, linear decay; stops at
    `deadline` (time.time()) with what it has, saying so."""
    body = [p for p in net.encoder.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(
        [{"params": body, "lr": lr}, {"params": list(net.heads.parameters()), "lr": lr * head_lr}],
        weight_decay=0.01,
    )
    net.train()
    t0, losses, pairs, stopped = time.perf_counter(), [], 0, False
    for step, (task, st, b) in enumerate(plan):
        if time.time() > deadline:
            log(f"  deadline reached at step {step}/{len(plan)}")
            stopped = True
            break
        frac = step / len(plan)
        scale = frac / 0.06 if frac < 0.06 else (1 - frac) / 0.94
        for g, base in zip(opt.param_groups, (lr, lr * head_lr), strict=True):
            g["lr"] = base * scale
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = net([st.seq(r[1], r[2]) for r in b], task)
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
                f"  step {step}/{len(plan)} {task} loss {np.mean(losses[-100:]):.4f} "
                f"({pairs / max(el, 1e-9):.0f} pairs/s, {el / 60:.1f} min)"
            )
    net.eval()
    return {
        "steps": len(plan),
        "steps_done": step + (0 if stopped else 1),
        "pairs": pairs,
        "seconds": round(time.perf_counter() - t0, 1),
        "final_loss": round(float(np.mean(losses[-100:])), 4) if losses else None,
        "stopped_at_deadline": stopped,
    }


@torch.no_grad()
def predict(net, st, pairs, task: str, batch: int = 128) -> np.ndarray:
    order = sorted(range(len(pairs)), key=lambda i: len(st.seq(*pairs[i])))
    out = [None] * len(pairs)
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lg = net([st.seq(*pairs[i]) for i in idx], task)
        p = torch.sigmoid(lg.squeeze(-1)) if lg.shape[-1] == 1 else torch.softmax(lg, -1)
        for j, i in enumerate(idx):
            out[i] = p[j].float().numpy()
    return np.array(out)


def load_warm_start(net, peft_model, folder: Path) -> None:
    """The shipped stance trunk's adapters and stance head as the starting point."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    ad = load_file(str(folder / "adapter" / "adapter_model.safetensors"))
    set_peft_model_state_dict(peft_model, ad)
    heads = load_file(str(folder / "heads.safetensors"))
    net.heads["stance"].load_state_dict(
        {"weight": heads["stance.weight"], "bias": heads["stance.bias"]}
    )


def run(args, log) -> dict:
    from peft import get_peft_model

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    t_all = time.perf_counter()
    deadline = time.time() + 60 * args.minutes
    base = paths.resolve_base(args.base)
    tok, enc = stance_net.load_base(base)
    cfg = stance_net.lora_config(enc.config.num_hidden_layers, args.top, args.rank, args.alpha)
    peft_model = get_peft_model(enc, cfg)
    net = stance_net.DecomposedNet(enc, args.top, HEADS)
    res: dict = {"seed": args.seed, "top": args.top, "rank": args.rank, "alpha": args.alpha}
    if args.warm_start:
        load_warm_start(net, peft_model, args.warm_start)
        res["warm_start"] = str(args.warm_start)

    nli_train, nli_held = inference_rows(args.inference)
    rng.shuffle(nli_train)
    rng.shuffle(nli_held)
    numeric = numeric_swaps(nli_train, rng, args.numeric)
    nli_dec = nli_train[: args.nli_train] + numeric
    nli_joint = nli_train[: args.joint_train]
    held_dec, held_joint = nli_held[: args.nli_held], nli_held[: args.joint_held]
    p_rows, ev = perspectrum_rows(args.data, rng, args.claims)
    cd_fit, cd_dev = claimdiff_rows(args.claimdiff, args.claims and 10 * args.claims)
    log(
        f"rows: nli {len(nli_dec)} decomposed ({len(numeric)} numeric) + {len(nli_joint)} joint, "
        f"held {len(held_dec)}/{len(held_joint)}; stance {len(p_rows['stance'])}, "
        f"equivalence {len(p_rows['equivalence'])}; claimdiff {len(cd_fit)}"
    )
    st = States(tok, net, MAX_LENGTH)
    jst = JointStates(tok, net, MAX_LENGTH)
    texts = [t for r in nli_dec + held_dec + cd_fit + cd_dev for t in (r[1], r[2])]
    texts += [t for rs in p_rows.values() for r in rs for t in (r[1], r[2])]
    texts += [t for k in ("tune", "dev") for c, n, p, _ in ev[k] for t in (c, n, p)]
    texts += [t for a, b, _ in ev["equiv_dev"] for t in (a, b)]
    t0 = time.perf_counter()
    st.need(texts, log)
    res["lower_seconds"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    jst.need_pairs([(r[1], r[2]) for r in nli_joint + held_joint], log)
    res["joint_lower_seconds"] = round(time.perf_counter() - t0, 1)

    tasks = {
        "nli": (nli_dec, st),
        "nli_joint": (nli_joint, jst),
        "stance": (p_rows["stance"], st),
        "equivalence": (p_rows["equivalence"], st),
        "claimdiff": (cd_fit, st),
    }
    plan = []
    for _ in range(int(np.ceil(args.epochs))):
        for name, (rows, states) in tasks.items():
            head = "nli" if name == "nli_joint" else name
            plan += [(head, states, b) for b in batches_by_length(rows, states, args.batch, rng)]
    rng.shuffle(plan)
    total = sum(len(r) for r, _ in tasks.values())
    plan = plan[: round(args.epochs * total / args.batch)]
    res["train"] = train_loop(net, plan, args.lr, log, deadline)

    # -- held-out measures
    res["nli_decomposed"] = nli_report(
        predict(net, st, [r[1:3] for r in held_dec], "nli"), held_dec
    )
    res["nli_joint"] = nli_report(
        predict(net, jst, [r[1:3] for r in held_joint], "nli"), held_joint
    )
    # the decomposed form on exactly the joint form's pairs, for a like-for-like row
    res["nli_decomposed_same_pairs"] = nli_report(
        predict(net, st, [r[1:3] for r in held_joint], "nli"), held_joint
    )
    log(
        json.dumps(
            {k: res[k] for k in ("nli_decomposed", "nli_joint", "nli_decomposed_same_pairs")}
        )
    )

    def sp(rows_, neg=False):
        return predict(net, st, [(n if neg else c, p) for c, n, p, _ in rows_], "stance")

    y_t = np.array([r[3] for r in ev["tune"]])
    y_d = np.array([r[3] for r in ev["dev"]])
    cut = macro_cut(y_t, sp(ev["tune"]))
    res["cut"] = round(cut, 4)
    res["stance_dev"] = stance_metrics(cut, y_d, sp(ev["dev"]), sp(ev["dev"], True))
    pe = predict(net, st, [(a, b) for a, b, _ in ev["equiv_dev"]], "equivalence")
    ye = np.array([y for _, _, y in ev["equiv_dev"]])
    res["equivalence_dev_auroc"] = round(100 * roc_auc_score(ye, pe), 2)
    pc = predict(net, st, [r[1:3] for r in cd_dev], "claimdiff")
    yc = np.array([r[3] for r in cd_dev])
    res["claimdiff_dev"] = {
        "S_auroc": round(float(roc_auc_score(yc == 1, pc[:, 1])), 3),
        "W_auroc": round(float(roc_auc_score(yc == 2, pc[:, 2])), 3),
    }
    res["seconds"] = round(time.perf_counter() - t_all, 1)
    log(json.dumps(res))
    save(args.out, peft_model, net, res, base, args)
    return res


def save(out: Path, peft_model, net, res: dict, base: str, args) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    peft_model.peft_config["default"].base_model_name_or_path = paths.HUB_MPNET
    peft_model.save_pretrained(str(out / "adapter"), save_embedding_layers=False)
    heads = {
        f"{k}.{n}": v.detach().float().contiguous()
        for k in HEADS
        for n, v in net.heads[k].state_dict().items()
    }
    save_file(heads, str(out / "heads.safetensors"))
    data = [*data_fingerprints(args.data), *cd.data_fingerprints(args.claimdiff)]
    data += [
        {"file": f"inference/{n}.jsonl", "sha256": sha256(args.inference / f"{n}.jsonl")}
        for n in NLI_FILES
    ]
    manifest = {
        "format": "perspect.relation/1",
        "base_model": {"name": args.base, "sha256": sha256(Path(base) / "model.safetensors")},
        "n_top": args.top,
        "max_length": MAX_LENGTH,
        "heads": HEADS,
        "nli_labels": list(NLI_LABELS),
        "claimdiff_labels": list(cd.RELATIONS),
        "adapter": {"rank": args.rank, "alpha": args.alpha, "targets": stance_net.ADAPTER_TARGETS},
        "data": data,
        "code": bundle.code_version(),
        "training": {
            k: v
            for k, v in res.items()
            if k in ("seed", "top", "rank", "alpha", "warm_start", "train", "seconds")
            or k.endswith("lower_seconds")
        },
        "args": {k: str(v) for k, v in vars(args).items()},
        "cut": res["cut"],
        "dev_metrics": {
            k: res[k]
            for k in (
                "nli_decomposed",
                "nli_joint",
                "nli_decomposed_same_pairs",
                "stance_dev",
                "equivalence_dev_auroc",
                "claimdiff_dev",
            )
        },
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def pack(full: Path, out: Path) -> None:
    """The trained folder as a bundle entry: adapter, heads and manifest, checked against the
    base's sha256 (perspect.core.model.bundle)."""
    man = json.loads((full / "manifest.json").read_text())
    keep = ("base_model", "code", "data", "training", "dev_metrics", "created")
    record = {k: man[k] for k in keep if k in man}
    bundle.pack(full, out, name=out.name, role="relation", base_id=man["base_model"]["name"],
                record=record)  # fmt: skip


def train_entry(data: Path, folder: Path, log, **options) -> dict:
    """`make models` step "relation": train in a scratch folder, then pack into `folder`."""
    import tempfile

    defaults = vars(parser().parse_args(["--out", "unused"]))
    args = argparse.Namespace(**{**defaults, **options, "data": Path(data)})
    with tempfile.TemporaryDirectory(prefix="perspect-relation-") as tmp:
        args.out = Path(tmp) / "relation"
        res = run(args, log)
        from perspect.lab.relation_fit import fit_folder

        res["decisions"] = fit_folder(args.out, args.inference, args.claimdiff)
        pack(args.out, Path(folder))
    return res


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--base", default=paths.PACKAGED_MPNET)
    ap.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    ap.add_argument("--claimdiff", type=Path, default=Path("data/claimdiff"))
    ap.add_argument("--inference", type=Path, default=Path("../shared/data/inference"))
    ap.add_argument("--warm-start", type=Path, default=Path("models/stance"))
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--rank", type=int, default=32)
    ap.add_argument("--alpha", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--epochs", type=float, default=1.5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--nli-train", type=int, default=24000)
    ap.add_argument("--joint-train", type=int, default=8000)
    ap.add_argument("--nli-held", type=int, default=3000)
    ap.add_argument("--joint-held", type=int, default=1500)
    ap.add_argument("--numeric", type=int, default=1500)
    ap.add_argument("--minutes", type=float, default=600, help="stop training after this long")
    ap.add_argument("--claims", type=int, default=None, help="a few claims of each set (smoke)")
    ap.add_argument("--seed", type=int, default=29)
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
