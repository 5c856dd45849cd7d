"""ONNX Runtime copies of Perspect's encoders, for CPU inference.

Why: PyTorch eager pays a fixed cost per operator, which dominates short inputs on a small CPU
(the ColBERT query encoder: 18.8 ms a query in PyTorch, 5.4 ms in ONNX Runtime, same vectors).
A model's graph is exported once (torch's torch.export-based exporter, 5-20 s) into an `onnx/`
folder beside its weights, stamped with the weights' fingerprint and re-exported when they change.
Where that cannot be done (no onnxruntime, a folder that cannot be written, an exporter gap) the
caller gets None and stays on PyTorch: slower, never wrong.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import warnings
from collections.abc import Callable, Mapping
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
_LOCK = threading.Lock()
_SESSIONS: dict[str, Any] = {}


def available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def export(
    module,
    inputs: Mapping[str, Any],
    path: Path,
    dynamic: Mapping[int, str],
    outputs: tuple[str, ...] = ("output",),
) -> None:
    """Export `module(*inputs.values())` to `path` (written whole or not at all), with the axes
    in `dynamic` ({axis: name}) left free in every input."""
    import torch

    dims = {axis: torch.export.Dim(name, min=1, max=4096) for axis, name in dynamic.items()}
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # "torchvision is not installed"
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        # the exporter's notes (deprecations inside torch, shared dim names) are not ours, and
        # its progress lines go to stdout, which `perspect search --json` keeps for JSON
        with torch.no_grad(), warnings.catch_warnings(), redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module.eval(),
                tuple(inputs.values()),
                str(tmp),
                input_names=list(inputs),
                output_names=list(outputs),
                dynamic_shapes={n: dict(dims) for n in inputs},
                dynamo=True,
                external_data=False,
                verbose=False,
            )
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def session(folder: str | Path, name: str, fingerprint: str, make: Callable[[Path], None]):
    """The ONNX Runtime session of `<folder>/onnx/<name>.onnx`, made by `make(path)` first when
    missing or stamped with another fingerprint; None where that cannot be done."""
    key = f"{Path(folder).resolve()}|{name}|{fingerprint}"
    with _LOCK:
        if key in _SESSIONS:
            return _SESSIONS[key]
        _SESSIONS[key] = None
        if not available():
            return None
        import onnxruntime as ort

        out = Path(folder) / "onnx"
        path, stamp = out / f"{name}.onnx", out / f"{name}.onnx.fingerprint"
        try:
            if not (path.is_file() and stamp.is_file() and stamp.read_text() == fingerprint):
                out.mkdir(exist_ok=True)
                make(path)
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
            log.warning("%s stays on PyTorch (%s: %s)", name, type(e).__name__, e)
        return _SESSIONS[key]


def run(sess, features: Mapping[str, Any], names: tuple[str, ...]) -> np.ndarray:
    """First output of `sess` for the int64 inputs `names` taken from tokenizer `features`."""
    return sess.run(None, {n: np.asarray(features[n], dtype=np.int64) for n in names})[0]


def files_fingerprint(folder: str | Path, patterns: tuple[str, ...]) -> str:
    """Content hash of the files matching `patterns` under `folder` (~0.1 s for MiniLM's 90 MB):
    a graph stays valid across a save that rewrites the same weights."""
    import hashlib

    folder = Path(folder)
    h = hashlib.sha256()
    for pat in patterns:
        for f in sorted(folder.glob(pat)):
            if f.is_file():
                h.update(str(f.relative_to(folder)).encode())
                with f.open("rb") as fh:
                    while chunk := fh.read(1 << 22):
                        h.update(chunk)
    return h.hexdigest()[:16]
