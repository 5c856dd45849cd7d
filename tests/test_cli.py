"""The `perspect` command end to end, through a subprocess as a user runs it."""

from __future__ import annotations

import json
import subprocess

import pytest

from .conftest import PERSPECTIVES, perspect_cmd, run_cli, write_json

run = run_cli


def test_build_search_status_add_delete(pools, home, tmp_path, monkeypatch):
    h = ("--home", str(home))
    monkeypatch.setenv("PERSPECT_PROGRESS_QUIET_S", "0")  # every stage of this quick build says so
    r = run(
        "index",
        "build",
        "--name",
        "demo",
        "--perspectives",
        str(pools["perspectives"]),
        "--evidence",
        str(pools["evidence"]),
        *h,
    )
    assert "built index demo" in r.stdout and "perspectives: 6" in r.stdout
    assert "indexing perspectives" in r.stderr  # progress goes to stderr

    out = json.loads(
        run("search", "school uniforms", "--index", "demo", "--json", "--retrieval-only", *h).stdout
    )
    assert out["schema"] == "perspect.hits/1" and out["pool"] == "perspectives"
    first = out["hits"][0]
    assert set(first) == {"id", "text", "score", "rank", "pool", "metadata"}
    assert first["id"] == "3" and first["rank"] == 1 and first["metadata"] == {"source": "test"}

    out = json.loads(
        run(
            "search", "pain", "--index", "demo", "--pool", "evidence", "--k", "1", "--json", *h
        ).stdout
    )
    assert [x["id"] for x in out["hits"]] == ["10"]

    run("index", "add", "--name", "demo", "--news", str(pools["news"]), *h)
    status = json.loads(run("index", "status", "--name", "demo", "--json", *h).stdout)
    pools_ = status["indexes"][0]["pools"]
    assert pools_["news"]["count"] == 5 and pools_["perspectives"]["count"] == 6
    assert "demo" in run("index", "status", *h).stdout

    r = run("index", "delete", "--name", "demo", "--pool", "news", "--ids", "a2#0", "a2#1", *h)
    assert "deleted 2" in r.stdout
    out = json.loads(
        run("search", "nuclear carbon", "--index", "demo", "--pool", "news", "--json", *h).stdout
    )
    assert all(not x["id"].startswith("a2") for x in out["hits"])

    table = run("search", "animals pain", "--index", "demo", *h).stdout
    assert "Animals feel pain" in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "", "--index", "demo"), "the claim is empty"),
        (("search", "x" * 2500, "--index", "demo"), "limit is 2,000"),
        (("search", "law", "--index", "missing"), "no index named 'missing'"),
        (("search", "law", "--index", "demo", "--pool", "news"), "has no news pool"),
        (("index", "build", "--name", "bad name!", "--perspectives", "x"), "bad index name"),
        (
            ("index", "build", "--name", "demo", "--perspectives", "/nonexistent.json"),
            "no such file",
        ),
    ],
)
def test_errors_are_one_clear_line(pools, home, args, message):
    run(
        "index",
        "build",
        "--name",
        "demo",
        "--perspectives",
        str(pools["perspectives"]),
        "--home",
        str(home),
        "-q",
    )
    r = run(*args, "--home", str(home), ok=False)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


def test_malformed_file_is_refused_with_line(home, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "fine"}\n{"id": 2, "text": "broken"\n')
    r = run(
        "index", "build", "--name", "b", "--perspectives", str(bad), "--home", str(home), ok=False
    )
    assert r.returncode == 2 and "bad.jsonl:2: malformed JSON" in r.stderr
    assert "--skip-bad" in r.stderr and "Traceback" not in r.stderr
    r = run(
        "index",
        "build",
        "--name",
        "b",
        "--perspectives",
        str(bad),
        "--home",
        str(home),
        "--skip-bad",
    )
    assert "bad records skipped: 1" in r.stdout


def test_perspect_home_env(pools, tmp_path):
    import os

    env = {**os.environ, "PERSPECT_HOME": str(tmp_path / "envhome")}
    subprocess.run(
        [
            *perspect_cmd(),
            "index",
            "build",
            "--name",
            "e",
            "-q",
            "--perspectives",
            str(pools["perspectives"]),
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    assert (tmp_path / "envhome" / "e" / "CURRENT").is_file()


def test_data_fetch_from_local_folder(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    write_json(src / "perspective_pool_v1.0.json", PERSPECTIVES)
    write_json(src / "evidence_pool_partial_v1.0.json", [{"eId": 1, "text": "x"}])
    dest = tmp_path / "dest"
    r = run("data", "fetch", "perspectrum", "--from", str(src), "--dest", str(dest))
    assert (dest / "perspective_pool_v1.0.json").read_text() == (
        src / "perspective_pool_v1.0.json"
    ).read_text()
    assert (dest / "evidence_pool_partial_v1.0.json").is_file()
    assert "perspective_pool_v1.0.json" in r.stdout


def test_data_fetch_offline_names_from(tmp_path):
    import os

    env = {**os.environ, "PERSPECT_PERSPECTRUM_URL": "http://127.0.0.1:9/"}
    r = subprocess.run(
        [*perspect_cmd(), "data", "fetch", "perspectrum", "--dest", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 2 and "--from DIR" in r.stderr and "Traceback" not in r.stderr
    assert not list((tmp_path / "d").iterdir())  # no partial file left behind


def test_installed_entry_point():
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "perspect"
    if not exe.exists():
        pytest.skip(f"no perspect script beside {sys.executable} (not pip-installed here)")
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "index" in r.stdout and "search" in r.stdout


def test_markup_and_escape_codes_in_data_print_literally(home, tmp_path):
    """A claim, an indexed text or a path with rich markup or terminal escape codes is shown as
    written, never interpreted (a MarkupError traceback, or a document driving the terminal)."""
    hostile = [
        {"id": "1", "text": "animals [/] rights [bold red]matter[/bold red]"},
        {"id": "2", "text": "animals \x1b]0;pwned\x07 rights \x1b[31mred\x1b[0m"},
    ]
    folder = tmp_path / "dir[" / "]x"  # the path 'dir[/]x/p.json'
    folder.mkdir(parents=True)
    pool = write_json(folder / "p.json", hostile)
    h = ("--home", str(home))
    run("index", "build", "--name", "h", "--perspectives", str(pool), *h)
    r = run("search", "animals [/] rights", "--index", "h", "--retrieval-only", *h)
    out = " ".join(r.stdout.split())
    assert "animals [/] rights" in out and "[bold red]matter[/bold red]" in out
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "␛]0;pwned␇" in out
    bad = run(
        "index", "add", "--name", "h", "--perspectives", str(folder / "none[/].json"), *h, ok=False
    )
    assert bad.returncode == 2 and "none[/].json" in bad.stderr and "Traceback" not in bad.stderr


def test_environment_failures_are_one_line(home, tmp_path, pools):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    for cmd in (("index", "status"), ("tui",)):
        r = run(*cmd, "--home", str(not_a_dir), ok=False)
        assert r.returncode == 2 and "is a file, not a folder" in r.stderr
        assert "Traceback" not in r.stderr
    run(
        "index",
        "build",
        "--name",
        "p",
        "--perspectives",
        str(pools["perspectives"]),
        "--home",
        str(home),
    )
    bad = subprocess.run(
        [*perspect_cmd(), "search", b"animals \xff rights", "--index", "p", "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "not valid UTF-8" in bad.stderr and "Traceback" not in bad.stderr
    # `| head` that left before the output: the reader's end is closed before anything is written
    piped = subprocess.Popen(
        [*perspect_cmd(), "index", "status", "--json", "--home", str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    piped.stdout.close()
    err = piped.stderr.read()
    assert piped.wait(timeout=120) == 141 and "Traceback" not in err and "BrokenPipe" not in err
