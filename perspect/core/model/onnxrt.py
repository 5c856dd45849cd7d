"""ONNX Runtime copies of Perspect's encoders, for CPU inference.

Why: PyTorch eager pays a fixed cost per operator, which dominates short inputs on a small CPU
(the ColBERT query encoder: 18.8 ms a query in PyTorch, 5.4 ms in ONNX Runtime, same vectors).
A model's graph is exported once (torch's TorchScript exporter, 1-10 s) into an `onnx/`
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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.errors import ModelError

log = logging.getLogger(__name__)
# One lock per graph (made under `_LOCK`), so that the factory's loaders open different graphs
# at once (ONNX Runtime builds a session without the GIL); one graph is still made and opened once.
_LOCK = threading.Lock()
_KEY_LOCKS: dict[str, threading.Lock] = {}
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

    with _EXPORT_LOCK:  # torch's exporter keeps global state: one export at a time
        _export(torch, module, inputs, path, dynamic, outputs)


# models loaded at once (reranker.factory.load) may each find their graph missing
_EXPORT_LOCK = threading.Lock()


def _export(torch, module, inputs, path: Path, dynamic, outputs) -> None:
    """Why the TorchScript exporter (`dynamo=False`): on these encoders it writes the same graph
    as the torch.export-based one (the same scores to 1e-5, tests/test_runtime.py) in a seventh
    of the time (the pair model 1.9 s against 12.7 s here), and `perspect models prepare` makes
    eight of them on a newcomer's machine."""
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
                dynamic_axes={n: dict(dynamic) for n in inputs},
                opset_version=OPSET,
                dynamo=False,
                verbose=False,
            )
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


OPSET = 17  # what the graphs are written in (ONNX Runtime reads up to 23)


def ready(folder: str | Path, name: str, fingerprint: str) -> bool:
    """Whether `<folder>/onnx/<name>.onnx` exists, stamped with `fingerprint` and its checksum
    (a stamp from before checksums were recorded is not: the graph is made again)."""
    out = Path(folder) / "onnx"
    return (out / f"{name}.onnx").is_file() and _stamped(out / f"{name}.onnx", fingerprint)


# A graph's stamp `<graph>.fingerprint` holds two lines: the fingerprint of the weights it was
# made from, and the sha256 of the graph as it was written. Why the second: the checksums of a
# bundle cover its weights, while the graph (or its optimized copy) is what a search runs; an
# edited graph passed `perspect models verify` and changed the answers.
def stamp_path(graph: Path) -> Path:
    """The file beside a graph that holds its weights' fingerprint and its own sha256 (read by
    perspect.core.model.bundle.verify too)."""
    return graph.with_name(graph.name + ".fingerprint")


def _stamped(graph: Path, fingerprint: str) -> bool:
    try:
        lines = stamp_path(graph).read_text().split()
    except OSError:
        return False
    return len(lines) == 2 and lines[0] == fingerprint


def _stamp(graph: Path, fingerprint: str) -> None:
    """Written whole or not at all: another process may be reading it."""
    out = stamp_path(graph)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(f"{fingerprint}\n{_sha256(graph)}\n")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def _made_alone(out: Path, name: str) -> Iterator[None]:
    """An exclusive flock on `<out>/.<name>.lock` while a graph (or its optimized copy) is made
    and stamped: two processes starting on a new install (two test workers, two server workers)
    would otherwise read one's graph while the other replaces it, and one of them stay on
    PyTorch. The lock dies with its holder."""
    import fcntl

    fd = os.open(out / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def graph_problem(graph: Path) -> str | None:
    """What is wrong with a made graph (None: it matches the checksum recorded when it was
    made): what `perspect models verify` reports and loading refuses."""
    try:
        lines = stamp_path(graph).read_text().split()
    except OSError:
        return f"{graph} has no stamp (its checksum is unknown)"
    if len(lines) != 2:
        return f"{graph} was made before graphs were checksummed"
    if _sha256(graph) != lines[1]:
        return f"{graph} is corrupted (sha256 mismatch with the checksum recorded when made)"
    return None


def _verified(graph: Path) -> None:
    """Refuse a graph whose bytes are not those recorded when it was made. A check is
    remembered in the cache per path, size, inode and change time (ctime: an edit changes it,
    whatever the mtime is set back to), so a start does not hash 90 MB graphs each time."""
    import json

    from perspect.core import paths
    from perspect.core.errors import ModelError

    st = graph.stat()
    key = f"{graph.resolve()}|{st.st_size}|{st.st_ino}|{st.st_mtime_ns}|{st.st_ctime_ns}"
    try:
        want = stamp_path(graph).read_text().split()[1]
    except (OSError, IndexError):
        want = ""
    memo = paths.cache_dir() / "graph-sha256.json"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if want and known.get(key) == want:
        return
    problem = graph_problem(graph)
    if problem is not None:
        raise ModelError(
            problem,
            hint=f"remake it: rm -r {graph.parent} && perspect models prepare",
        )
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f".{memo.name}.{os.getpid()}-{threading.get_ident()}")
        tmp.write_text(json.dumps({**known, key: want}))
        tmp.replace(memo)
    except OSError:
        pass  # a read-only cache costs only the hash next time


def existing(folder: str | Path, name: str, fingerprint: str):
    """The session of a graph exported earlier with this fingerprint, or None; never exports, so
    it needs neither torch nor the model (the cold-start path: perspect.reranker.served.ServedModel.serving)."""
    if not ready(folder, name, fingerprint):
        return None
    return session(folder, name, fingerprint, _no_export)


def quantized(folder: str | Path, name: str, fingerprint: str):
    """The session of an int8 copy of the exported graph `name` (dynamic quantization of its
    weights, per output channel), made from that graph first when missing; None where the graph
    is not exported or cannot be copied. Why per channel: on 160 dev pairs through the
    equivalence cross-encoder its scores correlate .96 with fp32, per tensor .89 (PyTorch's
    dynamic int8, per tensor: .70), at the same speed (1.6x fp32 here). Why unsigned weights
    (INT8_RECIPE): signed int8 weights against uint8 activations saturate 16-bit sums on x86
    CPUs without VNNI (AVX2 only: this machine and CI's); on 160 PERSPECTRUM pairs through the
    equivalence graph here they correlated .961 with fp32 (a tiny random trunk's P(support) off
    by up to .55), unsigned .987, 7-bit signed .984, at one speed."""
    if not ready(folder, name, fingerprint):
        return None

    def make(path: Path) -> None:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        was = logging.root.manager.disable
        logging.disable(logging.WARNING)  # "consider pre-processing": not for dynamic int8
        try:
            quantize_dynamic(
                path.with_name(f"{name}.onnx"), tmp, per_channel=True, weight_type=QuantType.QUInt8
            )
            tmp.replace(path)
        finally:
            logging.disable(was)
            tmp.unlink(missing_ok=True)

    return session(folder, f"{name}.int8", f"{fingerprint}+{INT8_RECIPE}", make)


INT8 = "onnx-dynamic-int8-per-channel"  # a served model's manifest "quantized" for int8 graphs
# How the int8 copies are made, in their stamps: a copy made another way is made again
# (the signed-weight copies of before saturated on CPUs without VNNI: `quantized`).
INT8_RECIPE = "uint8-weights"
# Pairs per ONNX Runtime call for the cross-encoders: a search's 30 candidates in length-sorted
# batches of 16 instead of one batch padded to the longest took 103 vs 121 ms (int8) and 154 vs
# 178 ms (fp32) here, 20 dev claims; 28 equivalence pairs 131 vs 152 ms (int8). PyTorch's
# per-call cost keeps its batches at 64.
PAIR_BATCH = 16


def served(folder: str | Path, name: str, fingerprint: str, int8: bool = False):
    """The session of graph `name` (or of its int8 copy) made earlier for these weights, or
    None: what a model's `serving` constructor opens without torch."""
    if int8:
        return existing(folder, f"{name}.int8", f"{fingerprint}+{INT8_RECIPE}")
    return existing(folder, name, fingerprint)


def made(
    folder: str | Path,
    name: str,
    fingerprint: str,
    make: Callable[[Path], None],
    int8: bool = False,
):
    """The session of graph `name`, exported by `make` first if needed (and its int8 copy made,
    with `int8`), or None: what a loaded model's `for_inference` opens."""
    sess = session(folder, name, fingerprint, make)
    return quantized(folder, name, fingerprint) if sess is not None and int8 else sess


def _no_export(path: Path) -> None:
    raise FileNotFoundError(f"{path} went missing")


def session(folder: str | Path, name: str, fingerprint: str, make: Callable[[Path], None]):
    """The ONNX Runtime session of `<folder>/onnx/<name>.onnx`, made by `make(path)` first when
    missing or stamped with another fingerprint; None where that cannot be done."""
    key = f"{Path(folder).resolve()}|{name}|{fingerprint}"
    with _LOCK:
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key in _SESSIONS:
            return _SESSIONS[key]
        _SESSIONS[key] = None
        if not available():
            return None
        import onnxruntime as ort

        out = Path(folder) / "onnx"
        path = out / f"{name}.onnx"
        try:
            if not ready(folder, name, fingerprint):
                out.mkdir(exist_ok=True)
                with _made_alone(out, name):
                    if not ready(folder, name, fingerprint):  # not made meanwhile by another
                        make(path)
                        _stamp(path, fingerprint)
            _SESSIONS[key] = _open(ort, path, fingerprint)
        except ModelError:
            del _SESSIONS[key]  # a damaged graph is refused at every load, not only the first
            raise
        except Exception as e:  # an unwritable folder, an exporter gap: PyTorch still works
            log.warning("%s stays on PyTorch (%s: %s)", name, type(e).__name__, e)
        return _SESSIONS[key]


def _open(ort, path: Path, fingerprint: str):
    """A session of the graph at `path`, from its optimized copy where one was saved.

    Why the copy: ORT's graph optimizations cost 0.3-0.5 s a MiniLM graph at every load, 1.5 s
    of a cold search with four graphs; loading the saved optimized graph takes 0.1-0.2 s. The
    copy is named for the ONNX Runtime version and stamped like the graph (this machine's cache:
    `ORT_ENABLE_ALL` output may be specific to the CPU it ran on)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = min(4, os.cpu_count() or 1)
    # idle ORT threads spin by default and starve the PyTorch work of the same search
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3
    opt = path.with_name(f"{path.stem}.opt-{ort.__version__}.onnx")
    if opt.is_file() and _stamped(opt, fingerprint):
        return _open_optimized(ort, opts, opt)
    try:
        with _made_alone(path.parent, opt.name):
            if opt.is_file() and _stamped(opt, fingerprint):  # made meanwhile by another
                return _open_optimized(ort, opts, opt)
            return _optimize(ort, opts, path, opt, fingerprint)
    except OSError:  # a read-only folder: no lock, and no copy to write either
        return _optimize(ort, opts, path, opt, fingerprint)


def _open_optimized(ort, opts, opt: Path):
    _verified(opt)
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(opt), opts, providers=["CPUExecutionProvider"])


def _optimize(ort, opts, path: Path, opt: Path, fingerprint: str):
    """A session of the graph at `path` with ORT's optimizations, saving the optimized copy."""
    _verified(path)
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    tmp = opt.with_name(f".{opt.name}.tmp-{os.getpid()}")
    opts.optimized_model_filepath = str(tmp)
    try:
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception:  # the copy is an optimisation: a read-only folder costs only load time
        tmp.unlink(missing_ok=True)
        opts.optimized_model_filepath = ""
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    try:
        tmp.replace(opt)
        _stamp(opt, fingerprint)
    except OSError:
        tmp.unlink(missing_ok=True)
    return sess


def run(sess, features: Mapping[str, Any], names: tuple[str, ...]) -> np.ndarray:
    """First output of `sess` for the int64 inputs `names` taken from tokenizer `features`."""
    return run_all(sess, features, names)[0]


def run_all(sess, features: Mapping[str, Any], names: tuple[str, ...]) -> list[np.ndarray]:
    """Every output of `sess`, in the order the graph was exported with."""
    return sess.run(None, {n: np.asarray(features[n], dtype=np.int64) for n in names})


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
