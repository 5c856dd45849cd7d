"""Issue 33's study: a stronger trunk for stance and ClaimDiff at MiniLM's serving cost?

Frozen lower layers' outputs are computed once (bf16, in memory) and only the top layers and heads
train, on the way they would serve:
- joint: "claim </s></s> perspective" through every layer (the lower ones cached per pair);
- decomposed (PreTTR / DeFormer): claim and perspective each alone through the lower layers
  (cached per text: at serving time the perspective's states are index-time data), joined only
  in the top layers.
Fitted on PERSPECTRUM's fit claims (train minus the held-out 15 % "tune" claims); cuts fitted on
tune; every number printed is on dev. ClaimDiff: fit topics -> dev topics, as `perspect eval
claimdiff`. Run: python bench/trunk_study.py --variant NAME [--base PATH] (see VARIANTS).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import f1_score, roc_auc_score
from torch import nn

from perspect.core.datasets import claimdiff as cd
from perspect.core.datasets.negation import negate
from perspect.core.datasets.perspectrum import load_claims, load_perspectives, tune_claims_of
from perspect.lab.train import stance_trunk as trainer
from perspect.lab.train.pair_data import build_examples

DATA = Path("data/perspectrum")
CLAIMDIFF = Path("data/claimdiff")
VITAMINC = Path("../shared/data/vitaminc/vitaminc_real_shared.jsonl")
OUT = Path("/work/study")
SMOKE = False  # --smoke: a few claims and pairs of each set, to try every code path in minutes
VC_LABELS = {"SUPPORTS": 0, "REFUTES": 1, "NOT ENOUGH INFO": 2}


# -- the trunk: frozen embeddings + lower layers, trainable copy of the top layers ----------------
class Trunk:
    def __init__(self, path: str, n_top: int):
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        self.tok = AutoTokenizer.from_pretrained(path)
        self.m = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
        for p in self.m.parameters():
            p.requires_grad_(False)
        self.mpnet = self.m.config.model_type == "mpnet"
        layers = self.m.encoder.layer
        self.lower = layers[: len(layers) - n_top]
        self.top = layers[len(layers) - n_top :]
        self.hidden = self.m.config.hidden_size

    def bias(self, h: torch.Tensor):
        return self.m.encoder.compute_position_bias(h) if self.mpnet else None

    @staticmethod
    def run(layers, h, att, bias):
        ext = (1.0 - att[:, None, None, :].to(h.dtype)) * -1e4
        for layer in layers:
            kw = {"position_bias": bias} if bias is not None else {}
            o = layer(h, attention_mask=ext, **kw)
            h = o[0] if isinstance(o, tuple) else o
        return h

    @torch.no_grad()
    def lower_states(self, items, max_length: int, batch: int = 64, log=print) -> dict:
        """items: texts (decomposed) or (a, b) pairs (joint) -> unpadded bf16 states each."""
        items = sorted(set(items), key=lambda x: len(x) if isinstance(x, str) else len(x[0] + x[1]))
        out, t0 = {}, time.perf_counter()
        for s in range(0, len(items), batch):
            chunk = items[s : s + batch]
            if isinstance(chunk[0], str):
                enc = self.tok(
                    chunk, truncation=True, max_length=max_length, padding=True, return_tensors="pt"
                )
            else:
                enc = self.tok(
                    [a for a, _ in chunk],
                    [b for _, b in chunk],
                    truncation=True,
                    max_length=max_length,
                    padding=True,
                    return_tensors="pt",
                )
            with torch.autocast("cpu", dtype=torch.bfloat16):
                kw = {"token_type_ids": enc["token_type_ids"]} if "token_type_ids" in enc else {}
                h = self.m.embeddings(input_ids=enc["input_ids"], **kw)
                h = self.run(self.lower, h, enc["attention_mask"], self.bias(h))
            h = h.to(torch.bfloat16)
            for i, it in enumerate(chunk):
                n = int(enc["attention_mask"][i].sum())
                out[it] = h[i, :n].clone()
            if (s // batch) % 50 == 0:
                log(
                    f"  lower states {s + len(chunk)}/{len(items)} ({time.perf_counter() - t0:.0f} s)"
                )
        return out


class Top(nn.Module):
    """The trained part: a copy of the top layers, mean pooling, one head per task."""

    def __init__(self, trunk: Trunk, heads: dict[str, int]):
        super().__init__()
        self.trunk = [trunk]  # not a submodule: frozen, never saved
        self.layers = copy.deepcopy(trunk.top)
        for p in self.layers.parameters():
            p.requires_grad_(True)
        self.drop = nn.Dropout(0.1)
        self.heads = nn.ModuleDict({k: nn.Linear(trunk.hidden, n) for k, n in heads.items()})

    def forward(self, seqs: list[torch.Tensor], task: str) -> torch.Tensor:
        n = max(len(s) for s in seqs)
        h = torch.zeros(len(seqs), n, seqs[0].shape[-1], dtype=torch.bfloat16)
        att = torch.zeros(len(seqs), n, dtype=torch.long)
        for i, s in enumerate(seqs):
            h[i, : len(s)] = s
            att[i, : len(s)] = 1
        with torch.autocast("cpu", dtype=torch.bfloat16):
            tr = self.trunk[0]
            out = tr.run(self.layers, h, att, tr.bias(h))
            m = att.unsqueeze(-1).to(out.dtype)
            pooled = (out * m).sum(1) / m.sum(1)
            logits = self.heads[task](self.drop(pooled))
        return logits.float()


# -- examples over cached states ------------------------------------------------------------------
class States:
    def __init__(self, trunk: Trunk, mode: str, max_length: int):
        self.trunk, self.mode, self.max_length = trunk, mode, max_length
        self.cache: dict = {}

    def need(self, pairs, log=print) -> None:
        items = [t for a, b in pairs for t in (a, b)] if self.mode == "decomposed" else list(pairs)
        todo = [x for x in set(items) if x not in self.cache]
        if todo:
            self.cache.update(self.trunk.lower_states(todo, self.max_length, log=log))

    def seq(self, a: str, b: str) -> torch.Tensor:
        if self.mode == "decomposed":
            return torch.cat([self.cache[a], self.cache[b]])
        return self.cache[(a, b)]


def train(
    top: Top,
    tasks: dict[str, tuple[list, States]],
    epochs: float,
    lr: float,
    log=print,
    batch: int = 32,
    seed: int = 13,
) -> dict:
    """The product trainer's loop, on the study's full top layers (fp32, heads at 20x)."""
    res = trainer.train(
        top, tasks, epochs, lr, log, seed, batch, list(top.layers.parameters()), 20.0, False
    )
    res["train_ms_per_1000"] = round(1000 * res["seconds"] / max(res["pairs"], 1) * 1000, 0)
    return res


def predict(top: Top, st: States, pairs, task: str, batch: int = 128) -> np.ndarray:
    return trainer.predict(top, st, pairs, task, batch, bf16=False)


# -- data -----------------------------------------------------------------------------------------
def perspectrum_rows(log=print):
    from perspect.retriever.searcher import Searcher

    persp = load_perspectives(DATA)
    tune, fit = tune_claims_of(DATA)
    dev = load_claims(DATA, "dev")
    if SMOKE:
        tune, fit, dev = tune[:6], fit[:12], dev[:6]
    searcher = Searcher("default", home="indexes")
    rng = random.Random(13)
    ex = {}
    for name, claims, contrast in (("fit", fit, True), ("tune", tune, False), ("dev", dev, False)):
        e = build_examples(
            claims, persp, {}, searcher, rng, ("relevance", "stance"), contrast_stance=contrast
        )
        ex[name] = e
        log(
            f"{name}: {len(claims)} claims, relevance {len(e['relevance'])}, "
            f"stance {len(e['stance'])}"
        )
    searcher.close()
    rel = ex["fit"]["relevance"]
    rng.shuffle(rel)
    fit_rows = {
        "relevance": [("relevance", e.a, e.b, e.label) for e in rel[:8000]],
        "stance": [("stance", e.a, e.b, e.label) for e in ex["fit"]["stance"]],
    }

    def gold(claims):
        return [
            (c.text, negate(c.text), persp[p], float(cl.stance == "SUPPORT"))
            for c in claims
            for cl in c.clusters
            for p in cl.pids
            if p in persp
        ]

    evals = {
        "tune_stance": gold(tune),
        "dev_stance": gold(dev),
        "dev_relevance": [(e.a, e.b, e.label) for e in ex["dev"]["relevance"]],
    }
    return fit_rows, evals


def claimdiff_rows():
    fit = cd.load_pairs(CLAIMDIFF, "fit")
    unrelated = cd.unrelated_pairs(fit, len(fit), 13)
    rows = [
        ("claimdiff", p.claim_a, p.claim_b, cd.RELATIONS.index(p.relation)) for p in fit + unrelated
    ]
    dev = cd.load_pairs(CLAIMDIFF, "dev")
    if SMOKE:
        rows, dev = rows[:200], dev[:150]
    return rows, cd.load_pairs(CLAIMDIFF, "tune"), dev


def vitaminc_rows():
    """(train, held-out): one page in ten (by hash) is held out, so no page is in both."""
    import hashlib

    train, held = [], []
    for x in VITAMINC.open():
        r = json.loads(x)
        row = ("vitaminc", r["claim"], r["evidence"], VC_LABELS[r["label"]])
        h = int(hashlib.md5(r["page"].encode()).hexdigest(), 16) % 10
        (held if h == 0 else train).append(row)
    return (train[:300], held[:100]) if SMOKE else (train, held)


def compare_rows():
    """The hand-written article pairs of bench/compare_cases.json as (A, B, dispute) rows."""
    cases = json.loads(Path("bench/compare_cases.json").read_text())["cases"]
    return [(a, b, float(g == "dispute")) for c in cases for a, b, g in c["pairs"]]


def dispute_metrics(p_dispute: np.ndarray, rows, cut: float | None = None) -> dict:
    y = np.array([r[2] for r in rows])
    out = {"auroc": round(float(roc_auc_score(y, p_dispute)), 4)}
    if cut is not None:
        out["found"] = f"{int(((p_dispute >= cut) & (y == 1)).sum())}/{int(y.sum())}"
        out["false"] = f"{int(((p_dispute >= cut) & (y == 0)).sum())}/{int((y == 0).sum())}"
    return out


# -- metrics --------------------------------------------------------------------------------------
def stance_metrics(p_tune, y_tune, p_dev, y_dev, p_neg) -> dict:
    cut = trainer.macro_cut(y_tune, p_tune)
    return {**trainer.stance_metrics(cut, y_dev, p_dev, p_neg), "cut": round(cut, 3)}


def claimdiff_metrics(probs: np.ndarray, pairs) -> dict:
    rel = np.array([p.relation for p in pairs])
    return {
        k: round(float(roc_auc_score(rel == n, probs[:, cd.RELATIONS.index(n)])), 4)
        for k, n in (("S", "strengthen"), ("W", "weaken"))
    }


# -- variants -------------------------------------------------------------------------------------
def run_shipped(log) -> dict:
    from perspect.reranker.comparator import Comparator
    from perspect.reranker.model import PairModel

    _, ev = perspectrum_rows(log)
    model = PairModel.open("models/pair")

    def st(rows, neg=False):
        return model.predict([(n if neg else c, t) for c, n, t, _ in rows], ["stance"])["stance"]

    y_t = np.array([r[3] for r in ev["tune_stance"]])
    y_d = np.array([r[3] for r in ev["dev_stance"]])
    t0 = time.perf_counter()
    p_dev = st(ev["dev_stance"])
    serve = 1000 * (time.perf_counter() - t0) / len(p_dev) * 1000
    res = {
        "stance": stance_metrics(st(ev["tune_stance"]), y_t, p_dev, y_d, st(ev["dev_stance"], True))
    }
    rel = model.predict([(a, b) for a, b, _ in ev["dev_relevance"]], ["relevance"])["relevance"]
    res["relevance_auroc"] = round(100 * roc_auc_score([r[2] for r in ev["dev_relevance"]], rel), 2)
    res["serve_ms_per_1000"] = round(serve)
    _, _, dev = claimdiff_rows()
    cmp = Comparator.open("models/comparator")
    probs, _ = cmp.scores([(p.claim_a, p.claim_b) for p in dev], rationale=False)
    res["claimdiff"] = claimdiff_metrics(np.asarray(probs), dev)
    cmp_rows = compare_rows()
    pc, _ = cmp.scores([(a, b) for a, b, _ in cmp_rows], rationale=False)
    res["compare_cases_weaken"] = dispute_metrics(np.asarray(pc)[:, 2], cmp_rows)
    return res


def run_trained(args, log) -> dict:
    torch.manual_seed(args.seed)
    trunk = Trunk(args.base, args.top)
    res: dict = {"base": args.base, "mode": args.mode, "top": args.top, "seed": args.seed}
    fit_rows, ev = perspectrum_rows(log)
    st = States(trunk, args.mode, 64 if args.mode == "joint" else 40)
    t0 = time.perf_counter()
    allpairs = [(r[1], r[2]) for rows in fit_rows.values() for r in rows]
    allpairs += [(c, t) for k in ("tune_stance", "dev_stance") for c, n, t, _ in ev[k]]
    allpairs += [(n, t) for c, n, t, _ in ev["dev_stance"]]
    allpairs += [(a, b) for a, b, _ in ev["dev_relevance"]]
    st.need(allpairs, log)
    res["lower_seconds_perspectrum"] = round(time.perf_counter() - t0, 1)
    res["lower_items"] = len(st.cache)
    init = None
    if args.vitaminc:
        vc, vheld = vitaminc_rows()
        cmp_rows = compare_rows()
        vst = States(trunk, args.mode, 128 if args.mode == "joint" else 80)
        t0 = time.perf_counter()
        vst.need([(r[1], r[2]) for r in vc + vheld] + [(a, b) for a, b, _ in cmp_rows], log)
        res["lower_seconds_vitaminc"] = round(time.perf_counter() - t0, 1)
        vtop = Top(trunk, {"vitaminc": 3})
        res["vitaminc_train"] = train(
            vtop, {"vitaminc": (vc, vst)}, args.vitaminc, args.lr, log, seed=args.seed
        )
        pv = predict(vtop, vst, [(r[1], r[2]) for r in vheld], "vitaminc")
        yv = np.array([r[3] for r in vheld])
        res["vitaminc_heldout"] = {
            "pairs": len(vheld),
            "accuracy": round(100 * float((pv.argmax(1) == yv).mean()), 2),
            "macro_f1": round(100 * f1_score(yv, pv.argmax(1), average="macro"), 2),
            "majority": round(100 * float(np.bincount(yv).max() / len(yv)), 2),
        }
        pc = predict(vtop, vst, [(a, b) for a, b, _ in cmp_rows], "vitaminc")
        res["compare_cases_refutes"] = dispute_metrics(pc[:, 1], cmp_rows, 0.5)
        log(json.dumps(res))
        init = vtop.layers.state_dict()
        del vst
    top = Top(trunk, {"relevance": 1, "stance": 1})
    if init:
        top.layers.load_state_dict(init)
    res["train"] = train(
        top, {k: (v, st) for k, v in fit_rows.items()}, args.epochs, args.lr, log, seed=args.seed
    )

    def sp(rows, neg=False):
        return predict(top, st, [(n if neg else c, t) for c, n, t, _ in rows], "stance")

    y_t = np.array([r[3] for r in ev["tune_stance"]])
    y_d = np.array([r[3] for r in ev["dev_stance"]])
    res["stance"] = stance_metrics(
        sp(ev["tune_stance"]), y_t, sp(ev["dev_stance"]), y_d, sp(ev["dev_stance"], True)
    )
    rel = predict(top, st, [(a, b) for a, b, _ in ev["dev_relevance"]], "relevance")
    res["relevance_auroc"] = round(100 * roc_auc_score([r[2] for r in ev["dev_relevance"]], rel), 2)
    log(json.dumps(res))
    # ClaimDiff on its own copy of the top layers (from the VitaminC phase when there is one)
    rows, _, dev = claimdiff_rows()
    cst = States(trunk, args.mode, 128 if args.mode == "joint" else 80)
    cmp_rows = compare_rows()
    cst.need(
        [(r[1], r[2]) for r in rows]
        + [(p.claim_a, p.claim_b) for p in dev]
        + [(a, b) for a, b, _ in cmp_rows],
        log,
    )
    ctop = Top(trunk, {"claimdiff": 3})
    if init:
        ctop.layers.load_state_dict(init)
    res["claimdiff_train"] = train(
        ctop, {"claimdiff": (rows, cst)}, args.cd_epochs, args.lr, log, batch=16, seed=args.seed
    )
    probs = predict(ctop, cst, [(p.claim_a, p.claim_b) for p in dev], "claimdiff")
    res["claimdiff"] = claimdiff_metrics(probs, dev)
    pc = predict(ctop, cst, [(a, b) for a, b, _ in cmp_rows], "claimdiff")
    res["compare_cases_weaken"] = dispute_metrics(pc[:, cd.RELATIONS.index("weaken")], cmp_rows)
    res["serve_ms_per_1000"] = serve_cost(trunk, top, args.mode, ev)
    return res


@torch.no_grad()
def serve_cost(trunk: Trunk, top: Top, mode: str, ev) -> dict:
    """ms per 1,000 (claim, perspective) pairs for one claim's candidates: joint pays every layer
    per pair; decomposed pays the claim's lower layers once and the top per pair (the
    perspective's lower states are index-time data)."""
    rows = ev["dev_stance"][:200]
    claim, texts = rows[0][0], [t for _, _, t, _ in rows]
    out = {}
    for prec in ("bf16", "fp32"):
        auto = prec == "bf16"
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=auto):
            if mode == "joint":
                enc = trunk.tok([claim] * len(texts), texts, padding=True, return_tensors="pt")
                kw = {"token_type_ids": enc["token_type_ids"]} if "token_type_ids" in enc else {}
                h = trunk.m.embeddings(input_ids=enc["input_ids"], **kw)
                att = enc["attention_mask"]
                h = trunk.run(list(trunk.lower) + list(top.layers), h, att, trunk.bias(h))
            else:
                pst = States(trunk, mode, 40)
                pst.need([(claim, t) for t in texts], log=lambda *_: None)
                t0 = time.perf_counter()  # the perspectives' states are index-time work
                c = trunk.lower_states([claim], 40, log=lambda *_: None)[claim]
                seqs = [torch.cat([c, pst.cache[t]]) for t in texts]
                n = max(len(s) for s in seqs)
                h = torch.zeros(len(seqs), n, trunk.hidden, dtype=torch.bfloat16)
                att = torch.zeros(len(seqs), n, dtype=torch.long)
                for i, s in enumerate(seqs):
                    h[i, : len(s)], att[i, : len(s)] = s, 1
                if not auto:
                    h = h.float()
                trunk.run(top.layers, h, att, trunk.bias(h))
        out[prec] = round(1000 * (time.perf_counter() - t0) / len(texts) * 1000)
    return out


def serve_table(log) -> dict:
    """Serving cost of each trunk in one run, taking turns (the machine is shared, so only the
    ratios are meaningful): ms per 1,000 (claim, perspective) pairs of one claim, median of 3;
    plus what the decomposed trunk stores per perspective of the pool."""
    from perspect.reranker.model import PairModel
    from perspect.retriever.dense import resolve_model

    persp = load_perspectives(DATA)
    claim = load_claims(DATA, "dev")[0].text
    texts = list(persp.values())[:256]
    mp = Trunk(str(OUT / "mpnet_x/all-mpnet-base-v2"), 3)
    mini = Trunk(resolve_model("all-MiniLM-L6-v2"), 3)
    shipped, shipped8 = PairModel.open("models/pair"), PairModel.open("models/pair", int8=True)
    tops = {"mpnet": Top(mp, {"stance": 1}).eval(), "minilm": Top(mini, {"stance": 1}).eval()}
    ev = {"dev_stance": [(claim, "", t, 0.0) for t in texts]}
    runs = {
        "shipped MiniLM, ONNX fp32": lambda: shipped.predict(
            [(claim, t) for t in texts], ["stance"]
        ),
        "shipped MiniLM, ONNX int8": lambda: shipped8.predict(
            [(claim, t) for t in texts], ["stance"]
        ),
    }
    for name, tr in (("mpnet", mp), ("minilm", mini)):
        for mode in ("joint", "decomposed"):
            runs[f"{name} {mode}, torch"] = lambda tr=tr, mode=mode, name=name: serve_cost(
                tr, tops[name], mode, ev
            )
    times: dict[str, list] = {k: [] for k in runs}
    for _ in range(3):
        for k, f in runs.items():
            t0 = time.perf_counter()
            out = f()
            ms = 1000 * (time.perf_counter() - t0) / len(texts) * 1000
            times[k].append(out if isinstance(out, dict) and "bf16" in out else {"onnx": round(ms)})
    res = {}
    for k, xs in times.items():
        res[k] = {p: int(np.median([x[p] for x in xs])) for p in xs[0]}
        log(f"{k}: {res[k]}")
    # training: one step of the top layers over cached lower states (32 pairs), per 1,000 pairs
    for name, tr in (("mpnet", mp), ("minilm", mini)):
        st = States(tr, "decomposed", 40)
        pairs = [(claim, t) for t in texts[:32]]
        st.need(pairs, log=lambda *_: None)
        top = Top(tr, {"stance": 1})
        opt = torch.optim.AdamW(top.parameters(), 1e-5)
        xs = []
        for _ in range(4):
            t0 = time.perf_counter()
            top([st.seq(a, b) for a, b in pairs], "stance").sum().backward()
            opt.step()
            opt.zero_grad()
            xs.append(1000 * (time.perf_counter() - t0) / len(pairs) * 1000)
        res[f"{name} top-3 training step, bf16"] = {"ms_per_1000": int(np.median(xs[1:]))}
        log(f"{name} train: {res[f'{name} top-3 training step, bf16']}")
    toks = [len(mp.tok(t)["input_ids"]) for t in persp.values()]
    res["perspective_pool"] = {
        "texts": len(toks),
        "tokens": int(sum(toks)),
        "fp16_MB": round(sum(toks) * mp.hidden * 2 / 2**20, 1),
        "int8_MB": round(sum(toks) * (mp.hidden + 4) / 2**20, 1),
    }
    return res


def main() -> None:
    global SMOKE, OUT
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", required=True)
    ap.add_argument("--base", default=str(OUT / "mpnet_x/all-mpnet-base-v2"))
    ap.add_argument("--mode", choices=("joint", "decomposed"), default="decomposed")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--cd-epochs", type=float, default=6.0)
    ap.add_argument("--vitaminc", type=float, default=0.0, help="epochs of the VitaminC phase")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--seed", type=int, default=13, help="model init, dropout and batch order")
    ap.add_argument("--shipped", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--serve", action="store_true", help="only the serving-cost table")
    args = ap.parse_args()
    SMOKE = args.smoke
    if SMOKE:
        OUT = OUT / "smoke"
        OUT.mkdir(exist_ok=True)
    torch.set_num_threads(2)
    log_path = OUT / f"{args.variant}.log"

    def log(msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        with log_path.open("a") as f:
            f.write(line + "\n")

    t0 = time.perf_counter()
    if args.serve:
        res = serve_table(log)
    else:
        res = run_shipped(log) if args.shipped else run_trained(args, log)
    res = {
        "variant": args.variant,
        **res,
        "wall_minutes": round((time.perf_counter() - t0) / 60, 1),
    }
    log(json.dumps(res))
    with (OUT / "results.jsonl").open("a") as f:
        f.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
