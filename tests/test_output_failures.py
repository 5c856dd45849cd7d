"""Output that cannot be written, and `compare` against itself.

A full disk behind `> file` and a closed stdout are one line (exit 2); a reader that left the pipe
(`| head -1`) ends the command quietly with 141, the shell's code for SIGPIPE. Never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from perspect.pipeline.compare import same_claim

from .conftest import perspect_cmd, run_cli

SEARCH = ["search", "school uniforms bullying", "--index", "tiny", "--pool", "perspectives"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_full_disk_is_one_line(built, extra):
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [*perspect_cmd(), *SEARCH, "--home", str(built), *extra],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == (
        "error: cannot write the output: No space left on device"
    )
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr


def test_a_closed_stdout_is_one_line(built):
    r = subprocess.run(
        [*perspect_cmd(), *SEARCH, "--home", str(built)],
        stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=lambda: os.close(1),
    )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == (
        "error: standard output is closed; nothing could be printed"
    )


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_closed_pipe_ends_quietly_with_141(built, extra):
    proc = subprocess.Popen(
        [*perspect_cmd(), *SEARCH, "--home", str(built), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    proc.stdout.close()  # the reader is gone before a line is written (`| head -0`)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "Exception ignored" not in err and "error" not in err


def test_head_1_gets_the_first_line_and_a_conventional_code(built):
    script = (
        f"{' '.join(perspect_cmd())} search 'school uniforms' --index tiny --pool perspectives "
        f"--home {built} --k 6 | head -1; echo rc=${{PIPESTATUS[0]}}"
    )
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert r.stdout.splitlines()[-1] in ("rc=0", "rc=141")
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Dr. Smith said pets feel pain.", "Dr. Smith said pets feel pain.", True),
        ("Dr. Smith said pets feel pain.", "dr smith said  pets feel pain!", True),
        (
            "The council approved the new budget for schools on Monday evening.",
            "The council approved the new budget for the schools on Monday evening.",
            True,
        ),
        ("Dr. Smith said pets feel pain.", "Dr. Smith said pets do not feel pain.", False),
        ("Nuclear plants are safe.", "Nuclear plants are never safe.", False),
        ("Nuclear plants are safe.", "Wind farms are cheap.", False),
        # one phrase moved: the same claim; a subject and object swapped, or "not" moved: not
        (
            "The council voted on the new parking rules on Monday.",
            "On Monday the council voted on the parking rules.",
            True,
        ),
        ("Yesterday the mayor resigned.", "The mayor resigned yesterday.", True),
        ("Dogs chase cats.", "Cats chase dogs.", False),
        ("He did not say he would go.", "He did say he would not go.", False),
        ("The plan passed by seven votes to two.", "The plan passed by two votes to seven.", False),
    ],
)
def test_same_claim_is_a_rule(a, b, same):
    assert same_claim(a, b) is same


def test_compare_never_calls_a_sentence_a_dispute_of_itself(tmp_path):
    text = (
        "# Budget\nThe council approved the new budget on Monday. Critics said the plan cuts "
        "funding for libraries. The mayor denied that any library would close.\n"
    )
    (tmp_path / "a.md").write_text(text)
    out = json.loads(
        run_cli("compare", str(tmp_path / "a.md"), str(tmp_path / "a.md"), "--json").stdout
    )
    assert out["dispute"] == [] and out["share"]["weakens"] == 0
    assert len(out["agreement"]) == 3
    assert all(x["a"] == x["b"] and x["probability"] == 1.0 for x in out["agreement"])


def test_compare_names_a_directory_as_such(tmp_path):
    (tmp_path / "a.md").write_text("One sentence here.")
    r = run_cli("compare", str(tmp_path), str(tmp_path / "a.md"), ok=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{tmp_path}: is a directory, not an article" in r.stderr
