"""Trains the argument model: (A, B) -> P(B argues for A), P(against A), P(neither), the stance
trunk's decomposed all-mpnet-base-v2 (LoRA on the top 3 layers) with an `argument` head (3-way)
beside its `stance` head, warm-started from the shipped relation model (the trunk sides come from).

Why one model for three questions (issue 55): a perspective's side and whether it takes one (A =
claim), which sentence of a paragraph backs a perspective (A = perspective) and which sentence of a
reader's document argues on the claim (A = claim) are one question; the rows are in
perspect.lab.train.argument_data. Each step scores both heads from one pass of the top layers:
for/against rows train `stance` (BCE) and `argument` (CE), "neither" rows `argument` only, and a
paragraph bag trains `argument` through the max over its sentences.

Why it survives a stopped session (2 cores, about an hour): the frozen lower layers' outputs are
cached on disk once per text (bf16, chunks under WORK/states), and the trained weights, optimizer
and step are checkpointed to WORK/checkpoint.pt every few minutes. WORK is outside the repository
(default ~/.cache/perspect/argument-run); a run resumes from what it finds there, and starts over
cleanly where it finds nothing (or a checkpoint of another recipe: the recipe's hash is in it).
Run: python -m perspect.lab.train.argument --out DIR [--work DIR] [--minutes N].

Why one module: the disk cache, the batch plan, the loss of both row kinds, the resumable loop
and the packing (with the cut to the shipped rank) are one recipe whose checkpoint key covers
them all; the rows themselves are in argument_data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from perspect.core import paths
from perspect.core.datasets.perspectrum import data_fingerprints
from perspect.core.model import bundle
from perspect.lab.train import argument_data as ad
from perspect.lab.train.stance_trunk import sha256
from perspect.reranker import stance_net

HEADS = {"stance": 1, "argument": 3}
MAX_LENGTH = 64  # wordpieces per text, as the relation model: an index's stored states serve both
CHUNK = 4096  # texts per file of cached lower states
EPS = 1e-6
# Rows a source gives one epoch: what an hour of this 2-core CPU trains (about 12 joined
# sequences a second through the top 3 layers, forward and backward, in fp32).
CAPS = {"perspectrum": 2200, "perspectrum-negated": 2200, "perspectrum-unrelated": 1500,
        "touche": 2000, "touche-unrelated": 500, "ukp": 4500}  # fmt: skip
BAGS_CAP = 1500
# The direction phase (issue 61, --direction DIR): warm-started from the argument model, it replays
# a sample of the rows above (so that what it knew is kept) beside the direction data's train
# rows and the denials; about an hour here, the cached states included.
DIRECTION_CAPS = {"perspectrum": 800, "perspectrum-negated": 800, "perspectrum-unrelated": 1200,
                  "touche": 600, "touche-unrelated": 500, "ibm": 500, "ibm-unrelated": 76,
                  "ukp": 6000, "direction-argument-argument": 4000,
                  "direction-thesis-point": 2037, "direction-point-counter": 1200,
                  "direction-claim-sentence": 0, "direction-sentence-sentence": 1700,
                  "direction-sentence-sentence-neither": 800, "denial": 900,
                  "denial-claim": 600}  # fmt: skip
# Not IAM's claim-sentence rows (its dev split still measures that level and fits mining's side
# cut): a topic and an on-topic web sentence always for or against, with no "neither", is UKP's
# shape with the opposite lesson; two runs with 2,000 and 3,031 of them (and 1,500 or 4,500 UKP
# rows) read nearly every on-topic sentence as an argument, and no cut on the held-out UKP topic
# reached 80 % arguments, so mining would have shown nothing (bench/STUDIES.md).
DIRECTION_BAGS_CAP = 500
CONTRAST_WEIGHT = 0.5  # the negated-A pass: its flipped label and the consistency term
HELD_CAP = 300  # rows of each held-out set the log reports (bench/argument.py: all of them)


def capped(rows: list, rng: random.Random, caps: dict | None = None) -> list:
    caps = CAPS if caps is None else caps
    by: dict[str, list] = {}
    for r in rows:
        by.setdefault(r.source, []).append(r)
    out = []
    for src, rs in sorted(by.items()):
        n = caps.get(src, len(rs))
        out += rng.sample(rs, n) if n < len(rs) else rs
    return out


def default_work() -> Path:
    """Outside the repository (a checkout's own cache is inside it): the user's cache."""
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "perspect" / "argument-run"


class DiskStates:
    """Lower-layer states per text (bf16, unpadded), computed once and kept in WORK/states so that
    a resumed run does not pay them again."""

    def __init__(self, tok, net, max_length: int, folder: Path):
        self.tok, self.net, self.max_length, self.folder = tok, net, max_length, folder
        self.cache: dict[str, torch.Tensor] = {}
        folder.mkdir(parents=True, exist_ok=True)
        for f in sorted(folder.glob("chunk-*.pt")):
            try:
                self.cache.update(torch.load(f, weights_only=True))
            except (OSError, RuntimeError, EOFError):
                f.unlink()  # a chunk cut short by a kill: recomputed below

    def need(self, texts, log, batch: int = 64) -> None:
        todo = sorted({t for t in texts if t not in self.cache}, key=len)
        log(f"lower states: {len(self.cache)} cached, {len(todo)} to compute")
        t0, fresh = time.perf_counter(), {}
        n_files = len(list(self.folder.glob("chunk-*.pt")))
        for s in range(0, len(todo), batch):
            chunk = todo[s : s + batch]
            enc = self.tok(chunk, truncation=True, max_length=self.max_length, padding=True,
                           return_tensors="pt")  # fmt: skip
            with torch.inference_mode():  # fp32: this CPU has no bf16 units (6x slower)
                h = self.net.lower(enc["input_ids"], enc["attention_mask"]).to(torch.bfloat16)
            for i, t in enumerate(chunk):
                fresh[t] = h[i, : int(enc["attention_mask"][i].sum())].clone()
            if len(fresh) >= CHUNK or s + batch >= len(todo):
                tmp = self.folder / f".chunk-{n_files:04d}.tmp"
                torch.save(fresh, tmp)
                tmp.rename(self.folder / f"chunk-{n_files:04d}.pt")
                self.cache.update(fresh)
                n_files, fresh = n_files + 1, {}
                el = time.perf_counter() - t0
                log(f"  lower states {s + len(chunk)}/{len(todo)} ({el:.0f} s)")

    def seq(self, a: str, b: str) -> torch.Tensor:
        return torch.cat([self.cache[a], self.cache[b]]).float()


def build_net(args):
    from peft import get_peft_model, set_peft_model_state_dict
    from safetensors.torch import load_file

    base = paths.resolve_base(args.base)
    tok, enc = stance_net.load_base(base)
    cfg = stance_net.lora_config(enc.config.num_hidden_layers, args.top, args.rank, args.alpha)
    peft_model = get_peft_model(enc, cfg)
    net = stance_net.DecomposedNet(enc, args.top, HEADS)
    if args.warm_start:
        full = bundle.resolve(args.warm_start)
        set_peft_model_state_dict(
            peft_model, load_file(str(full / "adapter" / "adapter_model.safetensors"))
        )
        heads = load_file(str(full / "heads.safetensors"))
        w, b = heads["stance.weight"], heads["stance.bias"]
        net.heads["stance"].load_state_dict({"weight": w, "bias": b})
        if "argument.weight" in heads:  # an argument model's own head (the direction phase)
            net.heads["argument"].load_state_dict(
                {"weight": heads["argument.weight"], "bias": heads["argument.bias"]}
            )
            return tok, peft_model, net, base
        # the argument head starts as the stance head read two ways, "neither" at zero
        zero_w, zero_b = torch.zeros_like(w), torch.zeros_like(b)
        net.heads["argument"].load_state_dict({
            "weight": torch.cat([w / 2, -w / 2, zero_w]),
            "bias": torch.cat([b / 2, -b / 2, zero_b]),
        })  # fmt: skip
    return tok, peft_model, net, base


def collect(args, rng: random.Random, log) -> dict:
    """Every row of the recipe, by role: train (rows, bags) and the held-out sets."""
    p_rows, p_eval = ad.perspectrum_rows(args.data, rng)
    bags = ad.evidence_bags(args.data, rng)
    touche, ibm, ukp = (
        ad.touche_rows(args.argument),
        ad.ibm_rows(args.argument),
        ad.ukp_rows(args.argument),
    )
    train_rows = p_rows + touche["train"] + ibm["train"] + ukp["train"]
    caps, bags_cap = CAPS, BAGS_CAP
    if args.direction:
        train_rows += ad.direction_rows(args.direction, "train")
        train_rows += ad.denial_rows(args.data, args.direction, rng, 2000)
        caps, bags_cap = DIRECTION_CAPS, DIRECTION_BAGS_CAP
    train_rows = capped(train_rows, rng, caps)
    bags = rng.sample(bags, min(len(bags), bags_cap))
    if args.limit:
        rng.shuffle(train_rows)
        train_rows, bags = train_rows[: args.limit], bags[: args.limit // 4]
    held = {
        "perspectrum_tune": p_eval["tune"],
        "perspectrum_dev": p_eval["dev"],
        "touche_dev": touche["dev"],
        "ukp_val": ukp["val"],
        **{f"ukp_{t}": ukp[t] for t in ad.UKP_HELD_OUT},
    }
    if args.direction:  # the dev split per level (the cuts are fitted on it, never trained on)
        dev = ad.direction_rows(args.direction, "dev")
        for level in ad.DIRECTION_LEVELS:
            held[f"direction_{level}"] = [
                r for r in dev if r.source.startswith(f"direction-{level}")
            ]
    cap = args.limit // 4 if args.limit else HELD_CAP
    held = {k: random.Random(1).sample(v, min(cap, len(v))) for k, v in held.items()}
    counts: dict[str, int] = {}
    for r in train_rows:
        key = f"{r.source}:{ad.LABELS[r.label]}"
        counts[key] = counts.get(key, 0) + 1
    counts.update({f"bags:{ad.LABELS[y]}": sum(b.label == y for b in bags) for y in range(3)})
    log(f"rows: {json.dumps(counts, sort_keys=True)}")
    return {"rows": train_rows, "bags": bags, "held": held, "counts": counts}


def make_plan(rows, bags, st, batch: int, bag_batch: int, epochs: float, seed: int) -> list:
    """Batches in training order: ("rows", [Row]) by length, ("bags", [Bag]); deterministic for a
    seed, so a resumed run skips the steps its checkpoint has done."""
    rng = random.Random(seed)
    plan: list = []
    for _ in range(int(np.ceil(epochs))):
        rs = list(rows)
        rng.shuffle(rs)
        for s in range(0, len(rs), batch * 50):
            part = sorted(rs[s : s + batch * 50], key=lambda r: len(st.seq(r.a, r.b)))
            plan += [("rows", part[i : i + batch]) for i in range(0, len(part), batch)]
        bs = list(bags)
        rng.shuffle(bs)
        plan += [("bags", bs[i : i + bag_batch]) for i in range(0, len(bs), bag_batch)]
    rng.shuffle(plan)
    total = len(rows) / batch + len(bags) / bag_batch
    return plan[: round(epochs * total)]


def step_loss(net, st, kind: str, b: list) -> torch.Tensor:
    if kind == "rows":
        pooled = net.pool([st.seq(r.a, r.b) for r in b])
        pooled = net.drop(pooled)
        y = torch.tensor([r.label for r in b])
        logits = net.heads["argument"](pooled).float()
        loss = nn.functional.cross_entropy(logits, y)
        sided = y != ad.NEITHER
        if sided.any():
            z = net.heads["stance"](pooled).float().squeeze(-1)[sided]
            loss = loss + nn.functional.binary_cross_entropy_with_logits(
                z, (y[sided] == ad.FOR).float()
            )
        con = [i for i, r in enumerate(b) if r.contrast]
        if con:
            loss = loss + CONTRAST_WEIGHT * contrast_loss(net, st, [b[i] for i in con], logits[con])
        return loss
    seqs, owner = [], []
    for i, bag in enumerate(b):
        for s in bag.sentences:
            seqs.append(st.seq(bag.a, s))
            owner.append(i)
    p = torch.softmax(net.heads["argument"](net.drop(net.pool(seqs))).float(), -1)
    own = torch.tensor(owner)
    losses = []
    for i, bag in enumerate(b):
        q = p[own == i]
        pf, pa = q[:, ad.FOR].max(), q[:, ad.AGAINST].max()
        if bag.label == ad.FOR:
            li = -torch.log(pf + EPS)
        elif bag.label == ad.AGAINST:
            li = -torch.log(pa + EPS) - torch.log(1 - pf + EPS)
        else:
            li = -torch.log(1 - pf + EPS) - torch.log(1 - pa + EPS)
        losses.append(li)
    return torch.stack(losses).mean()


DIRECTION_LICENCE = (
    "; and, for direction (../shared/data/direction, research use): Debatepedia argument pairs "
    "(Jo et al. 2021, no licence stated), ArguAna Counterargs / idebate.org (no licence stated), "
    "IAM stance (Cheng et al. 2022, no licence stated), US2016 and Moral Maze from AIFdb "
    "(GPL-3.0 repository, no data licence stated), Nixon-Kennedy (Menini et al. 2018, CC BY 4.0)"
)
SWAP = [ad.AGAINST, ad.FOR, ad.NEITHER]  # for <-> against, neither stays


def contrast_loss(net, st, rows: list, logits: torch.Tensor) -> torch.Tensor:
    """The negation's pass: (not-A, B) takes the flipped label (neither stays neither), and the
    two readings agree once for and against are swapped (symmetric KL: the consistency term)."""
    pooled = net.drop(net.pool([st.seq(r.contrast, r.b) for r in rows]))
    lc = net.heads["argument"](pooled).float()
    y = torch.tensor([SWAP[r.label] for r in rows])
    loss = nn.functional.cross_entropy(lc, y)
    lp, lq = torch.log_softmax(logits, -1), torch.log_softmax(lc, -1)[:, SWAP]
    kl = nn.functional.kl_div(lq, lp, log_target=True, reduction="batchmean")
    kl = kl + nn.functional.kl_div(lp, lq, log_target=True, reduction="batchmean")
    sided = y != ad.NEITHER
    if sided.any():
        z = net.heads["stance"](pooled).float().squeeze(-1)[sided]
        loss = loss + nn.functional.binary_cross_entropy_with_logits(
            z, (y[sided] == ad.FOR).float()
        )
    return loss + kl / 2


def recipe_key(args) -> str:
    keep = ("seed", "top", "rank", "alpha", "lr", "epochs", "batch", "bag_batch", "limit")
    blob = json.dumps({k: str(getattr(args, k)) for k in keep} | {"warm": str(args.warm_start)})
    if getattr(args, "direction", None):  # the direction phase: its own rows, its own run,
        # keyed by content (the warm start's weights, the data), not by how the paths were spelt,
        # so that `make models STEPS=direction` resumes a run started by hand and vice versa
        warm = bundle.resolve(args.warm_start)
        weights = [warm / "heads.safetensors", warm / "adapter" / "adapter_model.safetensors"]
        blob = json.dumps({k: str(getattr(args, k)) for k in keep})
        blob += f"|warm:{[sha256(f) for f in weights]}"
        blob += f"|direction:{ad.direction_fingerprints(args.direction)}"
        blob += f"|caps:{json.dumps(DIRECTION_CAPS, sort_keys=True)}"
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train(args, net, st, plan, log) -> dict:
    """The loop, resumed from WORK/checkpoint.pt when it is this recipe's."""
    body = [p for p in net.encoder.parameters() if p.requires_grad]
    heads = list(net.heads.parameters())
    lr, head_lr = args.lr, args.lr * 5
    opt = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": heads, "lr": head_lr}],
                            weight_decay=0.01)  # fmt: skip
    trained = {n: p for n, p in net.named_parameters() if p.requires_grad}
    ckpt, key, start = args.work / "checkpoint.pt", recipe_key(args), 0
    if ckpt.is_file():
        got = torch.load(ckpt, weights_only=False)
        if got.get("recipe") == key:
            for n, p in trained.items():
                p.data.copy_(got["params"][n])
            opt.load_state_dict(got["optimizer"])
            start = int(got["step"])
            log(f"resumed at step {start}/{len(plan)} from {ckpt}")
        else:
            log(f"{ckpt} is another recipe's: starting over")
    if start >= len(plan):
        return {"steps": len(plan), "resumed_at": start}

    def save_ckpt(step: int) -> None:
        tmp = ckpt.with_suffix(".tmp")
        state = {n: p.detach().clone() for n, p in trained.items()}
        torch.save({"recipe": key, "step": step, "params": state,
                    "optimizer": opt.state_dict()}, tmp)  # fmt: skip
        tmp.rename(ckpt)

    deadline = time.time() + 60 * args.minutes
    net.train()
    t0, last_save, losses, n = time.perf_counter(), time.time(), [], 0
    torch.manual_seed(args.seed + start)
    step = start
    for step in range(start, len(plan)):
        if time.time() > deadline:
            save_ckpt(step)
            log(f"  deadline: stopped at step {step}/{len(plan)} (checkpointed; run again)")
            raise SystemExit(3)
        frac = step / len(plan)
        scale = frac / 0.06 if frac < 0.06 else (1 - frac) / 0.94
        for g, base in zip(opt.param_groups, (lr, head_lr), strict=True):
            g["lr"] = base * scale
        kind, b = plan[step]
        loss = step_loss(net, st, kind, b)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(body + heads, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        n += len(b)
        if step % 50 == 0:
            el = time.perf_counter() - t0
            log(f"  step {step}/{len(plan)} {kind} loss {np.mean(losses[-50:]):.4f} "
                f"({el / 60:.1f} min)")  # fmt: skip
        if time.time() - last_save > 60 * args.checkpoint_minutes:
            save_ckpt(step + 1)
            last_save = time.time()
    save_ckpt(len(plan))
    net.eval()
    return {
        "steps": len(plan),
        "resumed_at": start,
        "seconds_this_run": round(time.perf_counter() - t0, 1),
        "final_loss": round(float(np.mean(losses[-100:])), 4) if losses else None,
    }


@torch.no_grad()
def scores(net, st, rows, batch: int = 128) -> np.ndarray:
    """(n, 4): P(for), P(against), P(neither) of the argument head, then the stance head's
    P(support)."""
    net.eval()
    order = sorted(range(len(rows)), key=lambda i: len(st.seq(rows[i].a, rows[i].b)))
    out = np.zeros((len(rows), 4))
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        pooled = net.pool([st.seq(rows[i].a, rows[i].b) for i in idx])
        arg = torch.softmax(net.heads["argument"](pooled).float(), -1)
        sta = torch.sigmoid(net.heads["stance"](pooled).float())
        out[idx, :3] = arg.numpy()
        out[idx, 3] = sta[:, 0].numpy()
    return out


def quick_report(net, st, held: dict) -> dict:
    """Held-out figures the log and manifest keep (bench/argument.py measures them all)."""
    from sklearn.metrics import f1_score, roc_auc_score

    rep = {}
    for name, rows in held.items():
        s = scores(net, st, rows)
        y = np.array([r.label for r in rows])
        sided = y != ad.NEITHER
        r = {"n": len(rows)}
        if sided.any() and len(set(y[sided])) == 2:
            ps = s[sided, 0] / (s[sided, 0] + s[sided, 1] + EPS)
            r["auroc_argument"] = round(100 * roc_auc_score(y[sided] == ad.FOR, ps), 2)
            r["auroc_stance_head"] = round(100 * roc_auc_score(y[sided] == ad.FOR, s[sided, 3]), 2)
        if (~sided).any():
            r["macro_f1_3way"] = round(float(f1_score(y, s[:, :3].argmax(1), average="macro")), 3)
        rep[name] = r
    return rep


def run(args, log) -> dict:
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    t_all = time.perf_counter()
    tok, peft_model, net, base = build_net(args)
    data = collect(args, rng, log)
    st = DiskStates(tok, net, MAX_LENGTH, args.work / "states")
    texts = {t for r in data["rows"] for t in (r.a, r.b, *((r.contrast,) if r.contrast else ()))}
    texts |= {t for b in data["bags"] for t in (b.a, *b.sentences)}
    texts |= {t for rows in data["held"].values() for r in rows for t in (r.a, r.b)}
    st.need(texts, log)
    plan = make_plan(data["rows"], data["bags"], st, args.batch, args.bag_batch, args.epochs,
                     args.seed)  # fmt: skip
    log(f"plan: {len(plan)} steps ({args.epochs} epochs)")
    res: dict = {"seed": args.seed, "top": args.top, "rank": args.rank, "alpha": args.alpha,
                 "warm_start": str(args.warm_start), "rows": data["counts"]}  # fmt: skip
    res["train"] = train(args, net, st, plan, log)
    res["held_out"] = quick_report(net, st, data["held"])
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
    manifest = {
        "format": "perspect.argument/1",
        "base_model": {"name": args.base, "sha256": sha256(Path(base) / "model.safetensors")},
        "n_top": args.top,
        "max_length": MAX_LENGTH,
        "heads": HEADS,
        "argument_labels": list(ad.LABELS),
        "adapter": {"rank": args.rank, "alpha": args.alpha, "targets": stance_net.ADAPTER_TARGETS},
        "data": [
            *data_fingerprints(args.data),
            *ad.fingerprints(args.argument),
            *(ad.direction_fingerprints(args.direction) if args.direction else []),
        ],
        "licence": "trained on UKP Sentential Argument Mining (annotations CC BY-NC): "
        "non-commercial research use; Touché 2023 CC BY-SA 4.0; IBM Claim Stance CC BY-SA 3.0"
        + (DIRECTION_LICENCE if args.direction else ""),
        "held_out": {
            "ukp_topics": list(ad.UKP_HELD_OUT),
            "touche": ["dev", "test"],
            "ibm": ["test"],
            "perspectrum": ["tune claims", "dev"],
        },
        "code": bundle.code_version(),
        "training": {k: v for k, v in res.items() if k != "held_out"},
        "args": {k: str(v) for k, v in vars(args).items()},
        "dev_metrics": res["held_out"],
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


SHIPPED_RANK = 16  # the packed adapter's rank (bench/RESULTS.md: what it costs against 32)


def compress(full: Path, rank: int = SHIPPED_RANK) -> dict:
    """Cut the adapter of the trained folder `full` to `rank` (each module's update B @ A, the
    best rank-`rank` approximation by SVD, the scale folded in) and store it in float16: the
    bundle's 60 MB hold it beside the relation model (a rank-32 float32 adapter is 4.2 MB, this
    one 1.3 MB). Returns the share of each update's energy kept (worst and mean)."""
    from safetensors.torch import load_file, save_file

    cfg_path = full / "adapter" / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    if int(cfg["r"]) <= rank:  # already that small (trained from a shipped model): float16 only
        f = full / "adapter" / "adapter_model.safetensors"
        w = load_file(str(f))
        save_file({k: v.to(torch.float16).contiguous() for k, v in w.items()}, str(f))
        return {"rank": int(cfg["r"]), "kept": 1.0}
    scale = float(cfg["lora_alpha"]) / float(cfg["r"])
    w = load_file(str(full / "adapter" / "adapter_model.safetensors"))
    out, kept = {}, []
    for k in [k for k in w if ".lora_A." in k]:
        kb = k.replace(".lora_A.", ".lora_B.")
        a, b = w[k].double(), w[kb].double()
        qb, rb = torch.linalg.qr(b)  # B A = Qb (Rb Qa^T... ) through the small core
        qa, ra = torch.linalg.qr(a.T)
        u, sv, vh = torch.linalg.svd(rb @ ra.T)
        kept.append(float((sv[:rank] ** 2).sum() / (sv**2).sum().clamp_min(1e-30)))
        root = torch.sqrt(sv[:rank] * scale)
        out[kb] = (qb @ u[:, :rank] * root).to(torch.float16).contiguous()
        out[k] = ((root[:, None] * vh[:rank]) @ qa.T).to(torch.float16).contiguous()
    save_file(out, str(full / "adapter" / "adapter_model.safetensors"))
    cfg["r"], cfg["lora_alpha"] = rank, rank  # scale 1: folded into the factors
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    return {
        "rank": rank,
        "kept_worst": round(min(kept), 4),
        "kept_mean": round(sum(kept) / len(kept), 4),
    }


def pack(full: Path, out: Path) -> None:
    """The trained folder as a bundle entry: adapter, heads and manifest."""
    man = json.loads((full / "manifest.json").read_text())
    keep = ("base_model", "code", "data", "training", "dev_metrics", "created", "licence")
    record = {k: man[k] for k in keep if k in man}
    bundle.pack(full, out, name=out.name, role="argument", base_id=man["base_model"]["name"],
                record=record)  # fmt: skip


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=None, help="cache + checkpoint (outside the repo)")
    ap.add_argument("--base", default=paths.PACKAGED_MPNET)
    ap.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    ap.add_argument("--argument", type=Path, default=Path("../shared/data/argument"))
    ap.add_argument("--warm-start", type=Path, default=Path("models/relation"))
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--rank", type=int, default=32)
    ap.add_argument("--alpha", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--epochs", type=float, default=1.5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--bag-batch", type=int, default=6)
    ap.add_argument("--minutes", type=float, default=600, help="checkpoint and stop after this")
    ap.add_argument("--checkpoint-minutes", type=float, default=5.0)
    ap.add_argument("--limit", type=int, default=None, help="a few rows (smoke)")
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--pack", type=Path, default=None, help="then pack --out into this entry")
    ap.add_argument("--direction", type=Path, default=None,
                    help="the direction phase: add ../shared/data/direction's rows and denials, "
                    "replay a sample of the others (warm-start from an argument model)")  # fmt: skip
    return ap


def main() -> None:
    args = parser().parse_args()
    args.work = args.work or default_work()
    args.work.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)
    args.out.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        with (args.work / "train.log").open("a") as f:
            f.write(line + "\n")

    run(args, log)
    if args.pack is not None:
        pack(args.out, args.pack)


if __name__ == "__main__":
    main()
