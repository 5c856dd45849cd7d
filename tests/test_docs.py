"""The README stays a user's guide that fits a few screens, and what it and docs/ tell a reader
to open or type exists: every repository path they name, every `make` target, every `perspect`
subcommand and option (read from the real argparse parser, so a renamed flag fails here)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from perspect.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, ROOT / "bench" / "RESULTS.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250
# a repository path inside `code` or a Markdown link: top-level folders of this repository
TOP = "docs|bench|perspect|tests|models|indexes|reranker|retriever|indexer|tui"
PATH = re.compile(rf"(?<![\w./<$:-])((?:{TOP})/[\w./-]*[\w/])")


def _code_spans(text: str) -> list[str]:
    """Inline `code`, fenced and indented code blocks, and Markdown link targets."""
    spans = re.findall(r"`([^`\n]+)`", text)
    spans += re.findall(r"\]\(([^)\s]+)\)", text)
    spans += re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    spans += re.findall(r"^(?: {4}|\t)(.+)$", text, re.M)
    return spans


def _named_paths(doc: Path) -> set[str]:
    return {m for span in _code_spans(doc.read_text()) for m in PATH.findall(span)}


def test_readme_fits_a_users_guide():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): design goes to docs/, "
        "figures to bench/RESULTS.md"
    )
    assert lines[0] == "# Perspect"
    for heading in ("## Two commands", "## Using it", "## Reliability", "## The shipped models"):
        assert heading in lines, heading


def test_readme_links_the_docs_and_results_that_exist():
    named = _named_paths(README)
    assert "bench/RESULTS.md" in named and "docs/architecture.md" in named
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"README.md names paths that do not exist: {missing}"
    # every page of docs/ is reachable from the README
    unlinked = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "docs").glob("*.md")
        if p.relative_to(ROOT).as_posix() not in named
    )
    assert not unlinked, f"docs/ pages the README does not link: {unlinked}"


@pytest.mark.parametrize("doc", DOCS[1:], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docs_name_only_paths_that_exist(doc):
    missing = sorted(p for p in _named_paths(doc) if not (ROOT / p).exists())
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


def test_make_targets_in_the_readme_exist():
    targets = set(re.findall(r"^([\w.-]+)\s*:(?!=)", (ROOT / "Makefile").read_text(), re.M))
    spans = _code_spans(README.read_text())
    named = {t for span in spans for t in re.findall(r"(?<![\w-])make ([a-z][\w-]*)", span)}
    assert {"demo", "test"} <= named
    assert named <= targets, f"README names make targets the Makefile lacks: {named - targets}"


def _commands(text: str) -> list[str]:
    """Each `perspect ...` command a reader is shown (code blocks and inline code), its
    continuation lines joined and its trailing comment dropped."""
    found: list[str] = []
    for span in _code_spans(text):
        current = None
        for raw in span.splitlines():
            line = raw.strip().removeprefix("$ ")
            if line.startswith("perspect "):
                current = line
                found.append(current)
            elif current is not None and raw[:1].isspace() and line.startswith(("[", "--")):
                found[-1] = found[-1] + " " + line
            else:
                current = None
    return [re.sub(r"\s+#.*$", "", c) for c in found]


def _subcommand(parser: argparse.ArgumentParser, words: list[str]):
    """The parser a command's leading words lead to, and the words that named a subcommand."""
    path = []
    for word in words:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        alternatives = word.split("|")
        if not subs or alternatives[0] not in subs[0].choices:
            break
        unknown = [w for w in alternatives if w not in subs[0].choices]
        assert not unknown, f"perspect {' '.join(path)}: no subcommand {unknown}"
        parser = subs[0].choices[alternatives[0]]
        path.append(alternatives[0])
    return parser, path


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_perspect_commands_shown_exist(doc):
    commands = _commands(doc.read_text())
    root = build_parser()
    for command in commands:
        words = command.split()[1:]
        parser, path = _subcommand(root, words)
        if doc == README:
            assert path, f"{command!r}: no subcommand"
        options = {s for a in parser._actions for s in a.option_strings}
        named = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", command))
        unknown = sorted(named - options)
        assert not unknown, f"{doc.name}: {command!r}: perspect {' '.join(path)} has no {unknown}"
    if doc == README:
        assert len(commands) >= 20  # the command-line synopsis is there


def test_results_keep_the_current_figures_on_a_few_screens():
    """Issue 74: RESULTS.md holds the current figures only (history is git's), STUDIES.md a short
    entry a study; every table section names the command that reproduces it."""
    results = (ROOT / "bench" / "RESULTS.md").read_text().splitlines()
    studies = (ROOT / "bench" / "STUDIES.md").read_text().splitlines()
    assert len(results) <= 400, f"bench/RESULTS.md has {len(results)} lines (at most 400)"
    assert len(studies) <= 300, f"bench/STUDIES.md has {len(studies)} lines (at most 300)"


# Figures the README quotes, each with where RESULTS states it (issue 74: a reader who checks a
# README figure finds it in the current table, not an older one).
README_FIGURES = [
    # (the README's words, RESULTS' words)
    ("T1 54.8, T2 81.2, T3 64.7, T4 49.0, T5 21.8", "**54.75** | **81.21** | **64.73 / 70.23** | **48.97** | **21.77**"),
    ("T1 of what a search keeps 49.9", "49.87 (P 43.5, R 58.3)"),
    ("`make test` 10.8\nmin", "**10.8 min**"),
    ("the answer after about 5.5 min", "**the answer at about 5 min 30 s**"),
    ("1.8 s at the median with the news, 1.1 s without", "p50 **1,779** / p95 2,297 ms with, 1,082"),
    ("right 3 times in 10\n  and argues the other way 1 in 8", "| **28.4 %** | 58.2 % | 13.4 % |"),
    ("7 of 10 shown on a side are right", "| **69.6 %** |"),
]  # fmt: skip


@pytest.mark.parametrize(("said", "measured"), README_FIGURES)
def test_the_readmes_figures_are_the_current_tables(said, measured):
    readme = README.read_text()
    results = (ROOT / "bench" / "RESULTS.md").read_text()
    assert said in readme, f"the README no longer says {said!r}: update README_FIGURES"
    assert measured in results, f"RESULTS.md does not hold {measured!r}, which the README quotes"


def test_every_bench_command_the_docs_name_runs():
    """Each `python -m bench NAME SUB` that RESULTS.md, the README or docs/ name is a bench and a
    subcommand of it (`--help` answers for each: the parser, its options and subcommands, are
    real); `python -m bench` lists them; an unknown name is one line, exit 2."""
    import subprocess
    import sys

    text = "\n".join(p.read_text() for p in DOCS)
    assert not re.findall(r"python bench/\w+\.py", text), "a bench is run as python -m bench NAME"
    named = set(re.findall(r"python -m bench (\w+)(?: ([a-z][\w-]*))?", text))
    listed = subprocess.run([sys.executable, "-m", "bench"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert listed.returncode == 0
    names = {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}
    assert {n for n, _ in named} <= names, {n for n, _ in named} - names
    for name, sub in sorted(named):
        argv = [sys.executable, "-m", "bench", name, *([sub] if sub else []), "--help"]
        got = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert got.returncode == 0 and "usage:" in got.stdout, (name, sub, got.stderr[-300:])
    bad = subprocess.run([sys.executable, "-m", "bench", "nope"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_every_command_results_names_answers():
    """Each `perspect CMD [SUB]` and `python -m` module of perspect that RESULTS.md names as the
    command of a figure parses: `--help` answers (a renamed command or module fails here)."""
    import subprocess
    import sys

    text = (ROOT / "bench" / "RESULTS.md").read_text()
    cli = set(re.findall(r"`perspect ([a-z]+)(?: ([a-z]+))?", text))
    modules = set(re.findall(r"python -m (perspect\.[a-z_.]+[a-z])", text))
    assert cli and modules
    script = Path(sys.executable).with_name("perspect")
    for cmd, sub in sorted(cli):
        argv = [str(script), cmd, *([sub] if sub else []), "--help"]
        got = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert got.returncode == 0 and "usage:" in got.stdout, (cmd, sub, got.stderr[-300:])
    for module in sorted(modules):
        got = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert got.returncode == 0 and "usage:" in got.stdout, (module, got.stderr[-300:])


def test_the_benches_share_one_harness():
    """At most 20 files in bench/ besides its data (issue 74); every bench module reads the
    harness (bench/harness.py) rather than keeping its own timing, claims and command line."""
    here = ROOT / "bench"
    files = [p for p in here.iterdir() if p.is_file() and p.suffix in (".py", ".md")]
    assert len(files) <= 20, sorted(p.name for p in files)
    for path in here.glob("*.py"):
        if path.name in ("harness.py", "__main__.py"):
            continue
        src = path.read_text(encoding="utf-8")
        assert "harness" in src, f"{path.name} does not use bench/harness.py"
        assert "def pct(" not in src and "import baseline" not in src, path.name
