"""One life cycle for the bundle's served models: manifest, fingerprint, load, graph, int8 copy.

The pair model, the equivalence cross-encoder and the ClaimDiff comparator each live in a bundle
entry and are served the same way: the manifest is checked (format, required files), the weights
are fingerprinted, the exported ONNX graph made for those weights is served without torch, and
a loaded PyTorch model makes that graph (and its int8 copy) at its first `for_inference`. The
steps live here once; each model file keeps only what is its own (its network, its tokenization,
its outputs). `reranker.factory` is the one factory every caller loads them with (`load`: the
bundle's models as one typed value; `open_served`: one entry's served model).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from perspect.core.errors import ModelError
from perspect.core.model import bundle, onnxrt


class ServedModel(ABC):
    FORMAT: ClassVar[str]  # the manifest's "format"
    MANIFEST: ClassVar[str]  # the manifest's file name in the entry
    WHAT: ClassVar[str]  # what it is, for messages
    TRAIN: ClassVar[str]  # the command that makes one
    GRAPH: ClassVar[str]  # its graph's name in <entry>/onnx/
    WEIGHTS: ClassVar[tuple[str, ...]]  # the files its graph is made from (the fingerprint)
    REQUIRED: ClassVar[tuple[str, ...]] = ()  # files an entry must hold beside the manifest
    ROLE: ClassVar[str]  # its bundle entry's role (bundle.json)

    manifest: dict[str, Any]
    origin: Path | None  # the folder asked for: where its graph lives
    _onnx: Any = None  # what ONNX Runtime serves it from, when it does

    # -- the life cycle, shared --------------------------------------------------------------------
    @classmethod
    def read(cls, origin: str | Path) -> tuple[Path, dict[str, Any]]:
        """The entry's full folder (a bundle entry rebuilt over its base) and its checked
        manifest; a missing or foreign manifest or a missing file is one line with the fix."""
        folder = bundle.resolve(origin)
        manifest = bundle.read_manifest(folder, cls.MANIFEST, cls.FORMAT, cls.WHAT, cls.TRAIN)
        for f in cls.REQUIRED:
            if not (folder / f).exists():
                raise ModelError(f"{folder} is incomplete: {f} missing", hint=cls.TRAIN)
        return folder, manifest

    @classmethod
    def fingerprint(cls, origin: str | Path) -> str:
        return onnxrt.files_fingerprint(origin, cls.WEIGHTS)

    @classmethod
    def graph(cls, origin: str | Path, int8: bool = False):
        """The session of its graph (or int8 copy) made earlier for these weights, or None."""
        return onnxrt.served(origin, cls.GRAPH, cls.fingerprint(origin), int8)

    def make_graph(self, make: Callable[[Path], None], int8: bool = False):
        """Its graph's session, exported by `make` first when missing (and the int8 copy made)."""
        return onnxrt.made(self.origin, self.GRAPH, self.fingerprint(self.origin), make, int8)

    @staticmethod
    def precision(manifest: dict[str, Any], int8: bool) -> dict[str, Any]:
        """The manifest as served: "quantized" says an int8 graph, and nothing else."""
        base = {k: v for k, v in manifest.items() if k != "quantized"}
        return {**base, "quantized": onnxrt.INT8} if int8 else base

    def serves(self, int8: bool) -> bool:
        """Already on ONNX Runtime at this precision."""
        return self._onnx is not None and bool(self.manifest.get("quantized")) == int8

    @classmethod
    def open(cls, folder: str | Path, int8: bool = False, **kw) -> ServedModel:
        """Served from its graph where that is made, else loaded and its graph made now (slow,
        once per weights), else on PyTorch where no graph can be made."""
        return cls.serving(folder, int8=int8, **kw) or cls.load(folder, **kw).for_inference(int8)

    # -- what each model says for itself ---------------------------------------------------------
    @classmethod
    @abstractmethod
    def load(cls, folder: str | Path, **kw) -> ServedModel:
        """The PyTorch model saved in `folder`."""

    @classmethod
    @abstractmethod
    def serving(cls, folder: str | Path, int8: bool = False, **kw) -> ServedModel | None:
        """The saved model on ONNX Runtime without torch, or None when its graph is not made."""

    @abstractmethod
    def for_inference(self, int8: bool = False) -> ServedModel:
        """The same model on ONNX Runtime where it can be (its graph made at the first call)."""
