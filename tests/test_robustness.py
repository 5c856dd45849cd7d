"""Hostile and unlucky input: encodings, stray NULs, unknown indexes, read-only media, --k."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from perspect import Perspect
from perspect.core.errors import IndexNotFound, InputError, PerspectError
from perspect.indexer.indexer import Indexer, Source
from perspect.indexer.news import read_news
from perspect.indexer.readers import read_pool

from .conftest import run_cli, write_jsonl


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_files_with_a_byte_order_mark_are_read(tmp_path, encoding):
    f = tmp_path / "p.csv"
    bom = {"utf-16-be": b"\xfe\xff"}.get(encoding, b"")
    f.write_bytes(bom + "id,text\n1,Zoos protect species – café\n".encode(encoding))
    items = read_pool(f).items
    assert [(i.id, i.text) for i in items] == [("1", "Zoos protect species – café")]


def test_a_nul_byte_anywhere_refuses_the_file_with_its_line(tmp_path):
    f = tmp_path / "p.txt"
    lines = [f"perspective number {i} is a fine sentence" for i in range(600)]  # > 8 KB
    lines[500] = "a record with a NUL\x00 inside"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        read_pool(f)
    assert e.value.line == 501 and "NUL" in e.value.reason


def test_news_folder_with_an_empty_file_skips_it_with_skip_bad(tmp_path, home):
    d = tmp_path / "news"
    d.mkdir()
    (d / "a.txt").write_text("# Wind\nWind farms kill birds. Turbines are loud.\n")
    (d / "empty.txt").write_text("")
    rep = read_news(d)
    assert [i.id for i in rep.items] == ["a#0", "a#1"]
    assert len(rep.errors) == 1 and "empty.txt" in str(rep.errors[0])
    with pytest.raises(InputError, match=r"empty\.txt: the file is empty"):
        rep.check()
    rep.check(skip_bad=True)  # the good article is indexed
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": "1", "text": "Wind power is clean."}])
    w = Indexer("n", home=home, skip_bad=True).build([Source("perspectives", p), Source("news", d)])
    assert w.counts["news"] == 2 and w.skipped_bad == 1


@pytest.mark.parametrize("op", ["add", "delete"])
def test_add_or_delete_on_an_unknown_index_creates_nothing(tmp_path, home, op):
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": "1", "text": "Wind power is clean."}])
    idx = Indexer("nope", home=home)
    with pytest.raises(IndexNotFound, match="no index named 'nope'"):
        idx.add([Source("perspectives", p)]) if op == "add" else idx.delete("perspectives", ["1"])
    assert not (home / "nope").exists()


def test_retrievers_from_the_environment_are_named_in_the_build_note(monkeypatch):
    from perspect.api import index_config

    monkeypatch.setenv("PERSPECT_RETRIEVERS", "bm25")
    notes: list[str] = []
    cfg = index_config(note=notes.append)
    assert cfg.retrievers == ("bm25",)
    assert notes == ["retrievers from $PERSPECT_RETRIEVERS: bm25"]


def test_full_pipeline_honours_k(tiny_index, tiny_pair_model):
    with Perspect.open("tiny", home=tiny_index, model=tiny_pair_model) as p:
        many = p.search("school uniforms should be compulsory")
        assert len(many.clusters) >= 2
        one = p.search("school uniforms should be compulsory", k=1).clusters
        assert len(one) == 1 and one[0].representative == many.clusters[0].representative
        for bad in (0, -1, 10**6, 2.5):
            with pytest.raises(PerspectError, match="k must be"):
                p.search("school uniforms", k=bad)


def test_cli_full_pipeline_k(tiny_index, tiny_pair_model):
    out = run_cli(
        "search", "school uniforms should be compulsory", "--index", "tiny",
        "--home", str(tiny_index), "--model", str(tiny_pair_model), "--k", "1", "--json",
    )  # fmt: skip
    assert len(json.loads(out.stdout)["clusters"]) == 1


@pytest.fixture
def read_only_copy(built, tmp_path):
    """`built` seen through a read-only bind mount (needs root and mount; skipped elsewhere)."""
    target = tmp_path / f"ro-{uuid.uuid4().hex[:8]}"
    target.mkdir()
    cmds = [
        ["mount", "--bind", str(built), str(target)],
        ["mount", "-o", "remount,ro,bind", str(target)],
    ]
    for c in cmds:
        r = subprocess.run(c, capture_output=True, text=True)
        if r.returncode != 0:
            subprocess.run(["umount", str(target)], capture_output=True)
            pytest.skip(f"cannot make a read-only mount here: {r.stderr.strip() or r.returncode}")
    yield target
    subprocess.run(["umount", "-l", str(target)], capture_output=True)


def test_search_on_read_only_media(read_only_copy, built, tiny_pair_model):
    with pytest.raises(OSError):
        (read_only_copy / "x").write_text("x")

    def answers(home) -> list:
        with Perspect.open("tiny", home=home, model=tiny_pair_model) as p:
            assert p.retrieve("school uniforms bullying").hits[0].id == "3"
            res = p.search("school uniforms should be compulsory")  # links, stores, engine
            return [c.to_json() for c in res.clusters]

    ro = answers(read_only_copy)
    assert ro and ro == answers(built)
    out = run_cli(
        "search", "school uniforms bullying", "--index", "tiny",
        "--home", str(read_only_copy), "--retrieval-only", "--json", ok=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hits"][0]["id"] == "3"


def _mount(args: list[str], target) -> None:
    r = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount here ({' '.join(args)}): {r.stderr.strip() or r.returncode}")


def test_disk_full_during_build_and_add(tmp_path, pools):
    disk = tmp_path / "small-disk"
    disk.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=600k", "tmpfs"], disk)
    try:
        home = disk / "home"
        Indexer("live", home=home).build([Source("perspectives", pools["perspectives"])])
        big = tmp_path / "big.txt"
        big.write_text("\n".join(f"perspective {i} says something new" for i in range(40_000)))
        for op in ("add", "build"):
            out = run_cli(
                "index", op, "--name", "live", "--home", str(home), "-q",
                "--perspectives", str(big), ok=False,
            )  # fmt: skip
            assert out.returncode == 2, out.stderr
            assert "no space left" in out.stderr and "Traceback" not in out.stderr
            versions = list((home / "live" / "versions").iterdir())
            assert len(versions) == 1  # the partial version was removed
            with Perspect.open("live", home=home) as p:
                assert p.pools == {"perspectives": 6}
                assert p.retrieve("school uniforms bullying").hits[0].id == "3"
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_writing_to_a_read_only_home_is_one_line(read_only_copy, pools):
    out = run_cli(
        "index", "add", "--name", "tiny", "--home", str(read_only_copy),
        "--perspectives", str(pools["perspectives"]), "-q", ok=False,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "cannot write to" in out.stderr and "read-only" in out.stderr
