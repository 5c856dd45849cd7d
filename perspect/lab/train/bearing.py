"""Teach the one trunk what bears on a claim as written (issue 71): the argument trunk's LoRA
adapters and a `bearing` head trained on the judged set (docs/judged-set.md) beside curated
debates, while every other head keeps what it reads.

Why train the trunk and not only a head: a linear head over the shipped trunk's pooled states
separates "bears on it" from "shares its topic" no better than the neither head it already has
(held-out AUROC .83 against .81, bench/RESULTS.md); the top layers must learn to read the claim
against the perspective for it. Why distillation: sides, verdicts, mining, news and `compare`
read the same trunk; each step also pulls every other head's logits towards the shipped trunk's
on the same pairs (and on (perspective, sentence) pairs, the verdicts' shape), so they move as
little as the bearing task allows, and their dev figures are measured again after.

Rows: judged (claim, perspective) pairs of `train` claims (both judges alike) and PERSPECTRUM
train claims' curated perspectives (for / against); `tune` claims pick the epoch. Lower states
are computed once (frozen base) and kept in memory; a checkpoint (adapter, head, optimizer, step)
is written to the work folder every few minutes, so a run resumes where it stopped.

    python -m perspect.lab.train.bearing --work DIR [--epochs 3] [--argument models/argument]
        [--out DIR]   # the trained entry, unpacked (perspect.lab.bearing_fit --trunk DIR reads it)
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from perspect.lab.bearing_fit import CURATED, curated_rows, judged_rows
from perspect.lab.judged import HERE, evidence_texts, perspective_texts, read_jsonl

HEAD = "bearing"
DISTILL = 1.0  # weight of the other heads' logit drift (mean squared), beside the bearing loss
CHECKPOINT_S = 300


def build(entry: Path, head_init: Path | None):
    """(peft model, DecomposedNet with every head and `bearing`, manifest, folder)."""
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file

    from perspect.core import paths
    from perspect.core.model import bundle
    from perspect.reranker import stance_net

    full = bundle.resolve(entry)
    man = json.loads((full / "manifest.json").read_text())
    _tok, enc = stance_net.load_base(paths.resolve_base(man["base_model"]["name"]))
    peft_model = PeftModel.from_pretrained(enc, str(full / "adapter"), is_trainable=True)
    heads = {k: v for k, v in man["heads"].items() if k != HEAD}
    net = stance_net.DecomposedNet(enc, int(man["n_top"]), {**heads, HEAD: 4})
    have = load_file(str(full / "heads.safetensors"))
    for name in heads:
        net.heads[name].load_state_dict(
            {"weight": have[f"{name}.weight"], "bias": have[f"{name}.bias"]}
        )
    if head_init is not None and head_init.is_file():
        got = np.load(head_init)
        net.heads[HEAD].load_state_dict(
            {
                "weight": torch.from_numpy(got["weight"]).float(),
                "bias": torch.from_numpy(got["bias"]).float(),
            }
        )
    for name, p in net.heads.named_parameters():
        p.requires_grad_(name.startswith(f"{HEAD}."))
    return peft_model, net, man, full


def distill_rows(limit: int = 2000) -> list[tuple[str, str]]:
    """(perspective, sentence) pairs of the judged set's evidence items: the verdicts' shape."""
    from perspect.lab.judged import paragraph_sentences

    ptext, etext = perspective_texts(), evidence_texts()
    out = []
    for it in read_jsonl(HERE / "items.jsonl"):
        if it["q"] == "ps" and it["eid"] in etext:
            sents = paragraph_sentences(etext[it["eid"]])
            if int(it["sent"]) < len(sents):
                out.append((ptext[it["pid"]], sents[int(it["sent"])]))
    return out[:limit]


def run(args, log=print) -> dict:
    import torch
    import torch.nn.functional as F
    from peft import get_peft_model_state_dict, set_peft_model_state_dict
    from sklearn.metrics import log_loss, roc_auc_score

    from perspect.lab.argument_eval import StateCache
    from perspect.reranker import factory

    torch.set_num_threads(2)
    torch.manual_seed(71)
    args.work.mkdir(parents=True, exist_ok=True)
    sets = judged_rows()
    train = [(a, b, y) for a, b, y in sets["train"]] + curated_rows(args.data, CURATED)
    tune = sets["tune"]
    extra = [(a, b, -1) for a, b in distill_rows()]  # distillation only
    log(f"rows: train {len(train)}, tune {len(tune)}, distill-only {len(extra)}")
    served = factory.load(["trunk"], factory.Serving(), entries={"trunk": args.argument}).trunk
    states = StateCache(served.lower)
    t0 = time.perf_counter()
    texts = list(dict.fromkeys(t for r in train + tune + extra for t in r[:2]))
    states.get(texts)
    log(f"lower states of {len(texts)} texts in {time.perf_counter() - t0:.0f} s")
    peft_model, net, _man, _full = build(args.argument, args.head_init)
    cols = [n for n in net.heads if n != HEAD]

    def seqs(rows):
        return [torch.from_numpy(np.concatenate(states.get([a, b]))) for a, b, _ in rows]

    def logits(rows, batch=64, grad=False):
        out = []
        for s in range(0, len(rows), batch):
            with torch.set_grad_enabled(grad):
                pooled = net.pool(seqs(rows[s : s + batch]))
                out.append(torch.cat([net.heads[h](pooled) for h in [*cols, HEAD]], -1))
        return torch.cat(out)

    net.eval()
    teacher_path = args.work / "teacher.pt"
    rows_all = train + extra
    if teacher_path.is_file():
        teacher = torch.load(teacher_path)
    else:
        t1 = time.perf_counter()
        with torch.inference_mode():
            teacher = logits(rows_all)[:, :-4].clone()
        torch.save(teacher, teacher_path)
        log(f"teacher logits of {len(rows_all)} rows in {time.perf_counter() - t1:.0f} s")
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    ckpt = args.work / "checkpoint.pt"
    state = {"epoch": 0, "step": 0, "curve": []}
    if ckpt.is_file():
        got = torch.load(ckpt, weights_only=False)
        set_peft_model_state_dict(peft_model, got["adapter"])
        net.heads[HEAD].load_state_dict(got["head"])
        opt.load_state_dict(got["opt"])
        state = got["state"]
        log(f"resumed at epoch {state['epoch']} step {state['step']}")

    def save():
        torch.save({"adapter": get_peft_model_state_dict(peft_model),
                    "head": net.heads[HEAD].state_dict(), "opt": opt.state_dict(),
                    "state": state}, ckpt)  # fmt: skip

    def evaluate() -> dict:
        net.eval()
        with torch.inference_mode():
            z = logits(tune)
        p = torch.softmax(z[:, -4:], -1).numpy()
        y = np.array([r[2] for r in tune])
        gold = y < 2
        return {"tune_log_loss": round(float(log_loss(y, p, labels=range(4))), 4),
                "tune_bears_auroc": round(float(roc_auc_score(gold, p[:, 0] + p[:, 1])), 4)}  # fmt: skip

    if not state["curve"]:
        state["curve"].append({"epoch": 0, **evaluate()})
        log(f"epoch 0: {state['curve'][-1]}")
    last = time.perf_counter()
    while state["epoch"] < args.epochs:
        order = list(range(len(rows_all)))
        random.Random(71 + state["epoch"]).shuffle(order)
        batches = [order[s : s + args.batch] for s in range(0, len(order), args.batch)]
        net.train()
        t_ep, total = time.perf_counter(), 0.0
        for b_i in range(state["step"], len(batches)):
            idx = batches[b_i]
            rows = [rows_all[i] for i in idx]
            z = logits(rows, batch=len(rows), grad=True)
            y = torch.tensor([r[2] for r in rows])
            loss = DISTILL * F.mse_loss(z[:, :-4], teacher[idx])
            if (y >= 0).any():
                loss = loss + F.cross_entropy(z[y >= 0, -4:], y[y >= 0])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss)
            state["step"] = b_i + 1
            if b_i % 25 == 0:
                log(f"epoch {state['epoch'] + 1} batch {b_i + 1}/{len(batches)} loss "
                    f"{total / (b_i + 1 - 0):.4f} ({time.perf_counter() - t_ep:.0f} s)")  # fmt: skip
            if time.perf_counter() - last > CHECKPOINT_S:
                save()
                last = time.perf_counter()
        state["epoch"] += 1
        state["step"] = 0
        state["curve"].append({"epoch": state["epoch"], **evaluate(),
                               "minutes": round((time.perf_counter() - t_ep) / 60, 1)})  # fmt: skip
        log(f"epoch {state['epoch']}: {state['curve'][-1]}")
        save()
        torch.save({"adapter": get_peft_model_state_dict(peft_model),
                    "head": net.heads[HEAD].state_dict()}, args.work / f"epoch{state['epoch']}.pt")  # fmt: skip
    (args.work / "curve.json").write_text(json.dumps(state["curve"], indent=1) + "\n")
    return {"curve": state["curve"]}


def export(args, epoch: int, log=print) -> Path:
    """The entry of epoch `epoch` unpacked into `args.out`: adapter (float16), every head, and
    the manifest with the bearing head and its training record."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from perspect.core.model import bundle

    full = bundle.resolve(args.argument)
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(full, out, ignore=shutil.ignore_patterns("onnx"))
    got = torch.load(args.work / f"epoch{epoch}.pt", weights_only=False)
    ad = {k: v.to(torch.float16).contiguous() for k, v in got["adapter"].items()}
    save_file(ad, str(out / "adapter" / "adapter_model.safetensors"))
    heads = load_file(str(out / "heads.safetensors"))
    heads = {k: v for k, v in heads.items() if not k.startswith(f"{HEAD}.")}
    heads[f"{HEAD}.weight"] = got["head"]["weight"].float().contiguous()
    heads[f"{HEAD}.bias"] = got["head"]["bias"].float().contiguous()
    save_file(heads, str(out / "heads.safetensors"))
    man = json.loads((out / "manifest.json").read_text())
    man["heads"] = {**{k: v for k, v in man["heads"].items() if k != HEAD}, HEAD: 4}
    curve = json.loads((args.work / "curve.json").read_text())
    man["bearing_training"] = {"epochs": epoch, "lr": args.lr, "batch": args.batch,
                               "distill": DISTILL, "curve": curve}  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(man, indent=2) + "\n")
    log(f"epoch {epoch} -> {out}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="checkpoints (outside the repo)")
    ap.add_argument("--argument", type=Path, default=Path("models/argument"))
    ap.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    ap.add_argument("--head-init", type=Path, default=None, help="bearing_head.npz of bearing_fit")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", type=Path, default=None, help="export this epoch's entry here")
    ap.add_argument("--export-epoch", type=int, default=None)
    args = ap.parse_args()
    if args.export_epoch is not None:
        export(args, args.export_epoch)
        return
    run(args)


if __name__ == "__main__":
    main()
