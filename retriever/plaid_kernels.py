"""PLAID's four C++ kernels, compiled once per configuration and loaded without a compiler.

Why not PyLate's own `torch.utils.cpp_extension.load` calls: they run at every first search of a
process, each takes torch's build lock (a `lock` file that only its holder removes), so a process
killed in that window (even with the kernels built: four times a few ms, 1.5-2 s into a search)
left a file that made every later search and build wait forever, silently. And one folder per
kernel name served two build configurations (PyLate's CPU and GPU variants of
`decompress_residuals_cpp`, other venvs), each rebuilding over the other's library (25 s a time).

Here the kernels are built by `perspect models prepare` or an index build, never by a search:
- into `$TORCH_EXTENSIONS_DIR/plaid-KEY/`, KEY a hash of everything the libraries depend on
  (torch version and location, Python ABI, compiler, flags, the sources), so two configurations
  never share a folder;
- by a child process (`python -m perspect.retriever.plaid_kernels`) holding an OS file lock
  (`fcntl.flock`), which dies with its holder: a killed builder blocks nobody, and the next one
  sweeps what it left; a live one is waited for at most `BUILD_TIMEOUT_S`;
- in a scratch folder renamed into place when complete, so a reader sees all or nothing.

A search loads the finished libraries with `importlib` (milliseconds, no lock) and hands them to
PyLate's classes; when they are missing it says how to build them instead of compiling.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.errors import ModelError

# (module name, source file relative to pylate/indexes/stanford_nlp, flags): what PyLate 1.6's CPU
# code paths compile (its GPU-only variants are never used here).
KERNELS = (
    ("filter_pids_cpp", "search/filter_pids.cpp", ("-O3",)),
    ("decompress_residuals_cpp", "search/decompress_residuals.cpp", ("-O3",)),
    ("segmented_lookup_cpp", "search/segmented_lookup.cpp", ("-O3",)),
    ("segmented_maxsim_cpp", "modeling/segmented_maxsim.cpp", ("-O3",)),
)
DONE = "kernels.json"
BUILD_TIMEOUT_S = 1200.0  # four kernels: ~100 s here, 2 min on a loaded 2-core machine
STANFORD = "pylate.indexes.stanford_nlp"
_LOADED: dict[str, Any] | None = None
_LOCK = threading.Lock()


def root() -> Path:
    """Where compiled extensions live: `$TORCH_EXTENSIONS_DIR`, else the project's cache."""
    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or paths.torch_extensions())


def _stanford_dir() -> Path:
    spec = importlib.util.find_spec("pylate")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("PyLate is not installed", hint="make setup (it installs pylate==1.6.0)")
    return Path(next(iter(spec.submodule_search_locations))) / "indexes" / "stanford_nlp"


def key() -> str:
    """What the libraries depend on, hashed (read without importing torch: 1-2 s)."""
    src = _stanford_dir()
    torch_spec = importlib.util.find_spec("torch")
    parts = [
        version("torch"),
        str(Path(torch_spec.origin).parent) if torch_spec and torch_spec.origin else "",
        sys.implementation.cache_tag or "",
        str(sysconfig.get_config_var("EXT_SUFFIX")),
        os.environ.get("CXX", "c++"),
        os.uname().machine,
    ]
    for name, rel, flags in KERNELS:
        body = (src / rel).read_bytes() if (src / rel).is_file() else b""
        parts.append(f"{name}|{rel}|{' '.join(flags)}|{hashlib.sha256(body).hexdigest()}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def folder() -> Path:
    return root() / f"plaid-{key()}"


def built() -> bool:
    return (folder() / DONE).is_file()


def ensure(timeout: float = BUILD_TIMEOUT_S) -> Path:
    """The kernels' folder, compiling it first (in a child process) when missing. For builds and
    `perspect models prepare`, not for searches."""
    dest = folder()
    if (dest / DONE).is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "perspect.retriever.plaid_kernels", str(dest), str(timeout)]
    try:
        r = subprocess.run(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout + 60,
        )
    except subprocess.TimeoutExpired:
        raise ModelError(
            f"compiling PLAID's kernels into {dest} took over {timeout + 60:.0f} s",
            hint="run `perspect models prepare` again on a less loaded machine",
        ) from None
    if r.returncode != 0 or not (dest / DONE).is_file():
        lines = [ln for ln in (r.stdout or "").splitlines() if ln.strip()]
        raise ModelError(
            f"cannot compile PLAID's kernels into {dest}: {lines[-1] if lines else r.returncode}",
            hint="check that a C++ compiler and ninja are installed (build-essential, "
            "pip install ninja), then: perspect models prepare",
        )
    return dest


def install() -> None:
    """Hand the compiled kernels to PyLate's Stanford classes, so that they never call
    `cpp_extension.load` (compiler, build lock) themselves. Loads once per process."""
    global _LOADED
    with _LOCK:
        if _LOADED is not None:
            return
        dest = folder()
        if not (dest / DONE).is_file():
            raise ModelError(
                f"PLAID's C++ kernels are not compiled for this torch/PyLate ({dest})",
                hint="compile them once: perspect models prepare (2-3 minutes)",
            )
        import torch  # noqa: F401  (the libraries link against the loaded libtorch)

        mods = {name: _load(dest / f"{name}{_suffix()}", name) for name, _, _ in KERNELS}
        storage = importlib.import_module(f"{STANFORD}.search.index_storage")
        strided = importlib.import_module(f"{STANFORD}.search.strided_tensor")
        colbert = importlib.import_module(f"{STANFORD}.modeling.colbert")
        storage.IndexScorer.filter_pids = mods["filter_pids_cpp"].filter_pids_cpp
        storage.IndexScorer.decompress_residuals = mods[
            "decompress_residuals_cpp"
        ].decompress_residuals_cpp
        storage.IndexScorer.loaded_extensions = True
        strided.StridedTensor.segmented_lookup = mods["segmented_lookup_cpp"].segmented_lookup_cpp
        strided.StridedTensor.loaded_extensions = True
        colbert._segmented_maxsim = mods["segmented_maxsim_cpp"].segmented_maxsim_cpp
        _LOADED = mods


def _suffix() -> str:
    return importlib.machinery.EXTENSION_SUFFIXES[-1]  # ".so", what torch names them


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ModelError(
            f"PLAID kernel {path} is missing", hint=f"remove {path.parent}; perspect models prepare"
        )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _exclusive(lock_path: Path, timeout: float):
    """An OS lock on `lock_path`: released by the kernel when its holder dies, however."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ModelError(
                        f"another process has been compiling PLAID's kernels for over "
                        f"{timeout:.0f} s (it holds {lock_path})",
                        hint="wait for it, or stop that process; the lock ends with it",
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)


def _build(dest: Path, timeout: float, names: tuple[str, ...] = ()) -> None:
    """The child process: compile every kernel (or those `names`: tests build one) into a
    scratch folder, then publish it whole."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(dest.parent / f"{dest.name}.lock", timeout):
        if (dest / DONE).is_file():
            return
        # Holding the lock, whatever else is here is a dead builder's leftover.
        for old in dest.parent.glob(f"{dest.name}.tmp-*"):
            shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(dest, ignore_errors=True)
        scratch = dest.parent / f"{dest.name}.tmp-{os.getpid()}"
        out = scratch / "out"
        out.mkdir(parents=True)
        from torch.utils.cpp_extension import load

        src = _stanford_dir()
        kernels = [k for k in KERNELS if not names or k[0] in names]

        def compile_one(kernel: tuple[str, str, tuple[str, ...]]) -> None:
            name, rel, flags = kernel
            build = scratch / name
            build.mkdir()
            load(
                name=name,
                sources=[str(src / rel)],
                extra_cflags=list(flags),
                build_directory=str(build),
                verbose=False,
            )
            lib = build / f"{name}{_suffix()}"
            shutil.copy2(lib, out / lib.name)
            print(f"compiled {name}", flush=True)

        # One compiler process per kernel, as many at once as there are cores: each is one
        # single-threaded g++ run (most of it parsing torch's headers), so on 2 cores the four
        # take about half the time they take one after another.
        workers = max(1, min(len(kernels), os.cpu_count() or 1))
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(compile_one, kernels))
        (out / DONE).write_text(json.dumps({"kernels": [k[0] for k in kernels], "key": key()}))
        os.replace(out, dest)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    _build(
        Path(sys.argv[1]),
        float(sys.argv[2]) if len(sys.argv) > 2 else BUILD_TIMEOUT_S,
        tuple(sys.argv[3:]),
    )
