"""ColBERT query encoding on ONNX Runtime.

Why: a query is one short sequence (16-64 tokens), where PyTorch eager spends most of its time in
per-op overhead. On this 2-core CPU the same MiniLM query encoder took 18.8 ms a query in PyTorch
and 5.4 ms in ONNX Runtime, with vectors equal to 5e-7 (139 dev claims; bench/retrieval.py reports
the search latency). Documents are still encoded by PyLate: batches amortise the overhead there.

The graph is exported once per model (torch.export-based exporter, ~10 s) into `<model>/onnx/`,
beside the weights, and re-exported when the weights change. Where that folder is not writable,
or ONNX Runtime is missing, queries fall back to PyTorch: slower, never wrong.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import warnings
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_LOCK = threading.Lock()
_SESSIONS: dict[str, Any] = {}


def available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def export(model, path: Path) -> None:
    """Export `model`'s token-embedding forward (plus L2 normalisation) with a dynamic length."""
    import torch

    class QueryForward(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            feats = {"input_ids": input_ids, "attention_mask": attention_mask}
            feats["token_type_ids"] = token_type_ids
            out = self.m.forward(feats)["token_embeddings"]
            return torch.nn.functional.normalize(out, p=2, dim=-1)

    feats = model.tokenize(["a query to trace"], is_query=True)
    names = [n for n in INPUTS if n in feats]
    if names != list(INPUTS):
        raise ValueError(f"unsupported tokenizer outputs {sorted(feats)}")
    length = torch.export.Dim("length", min=2, max=512)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # "torchvision is not installed"
    was_training = model.training
    model.eval()
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        # the exporter's notes (deprecations in torch internals, shared dim names) are not ours
        # (and its progress lines on stdout, which `perspect search --json` keeps for JSON)
        with torch.no_grad(), warnings.catch_warnings(), redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                QueryForward(model).eval(),
                tuple(feats[n] for n in INPUTS),
                str(tmp),
                input_names=list(INPUTS),
                output_names=["embeddings"],
                dynamic_shapes={n: {1: length} for n in INPUTS},
                dynamo=True,
                external_data=False,
                verbose=False,
            )
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
        if was_training:
            model.train()


def session(model, folder: str | Path, fingerprint: str):
    """The ONNX Runtime session for this model's queries, exported first if needed; None where
    that cannot be done (the caller then encodes with PyTorch)."""
    key = f"{Path(folder).resolve()}|{fingerprint}"
    with _LOCK:
        if key in _SESSIONS:
            return _SESSIONS[key]
        _SESSIONS[key] = None
        if not available():
            return None
        import onnxruntime as ort

        out = Path(folder) / "onnx"
        path, stamp = out / "query.onnx", out / "query.onnx.fingerprint"
        try:
            if not (path.is_file() and stamp.is_file() and stamp.read_text() == fingerprint):
                out.mkdir(exist_ok=True)
                export(model, path)
                stamp.write_text(fingerprint)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = min(4, os.cpu_count() or 1)
            # idle ORT threads spin by default and starve the PyTorch work of the same search
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.log_severity_level = 3
            _SESSIONS[key] = ort.InferenceSession(
                str(path), opts, providers=["CPUExecutionProvider"]
            )
        except Exception as e:  # an unwritable folder, an exporter gap: PyTorch still works
            log.warning("ColBERT queries stay on PyTorch (%s: %s)", type(e).__name__, e)
        return _SESSIONS[key]


def encode(sess, features: dict[str, Any]) -> np.ndarray:
    """Token vectors of one tokenized query, (length, dim)."""
    feed = {n: np.asarray(features[n], dtype=np.int64) for n in INPUTS}
    return sess.run(None, feed)[0][0]
