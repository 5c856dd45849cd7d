"""The environment is the lock file's: what CI installs is what the last green run installed.

`make setup` installs requirements.lock (pip-tools, `make lock`); a dependency added to
pyproject.toml without refreshing the lock, or a venv that drifted from it, fails here.
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if m:
            pins[_norm(m.group(1))] = m.group(2)
    return pins


def test_every_dependency_is_pinned_in_the_lock():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"]) + list(project["optional-dependencies"]["dev"])
    pins = _pins()
    missing = [w for w in wanted if _norm(re.split(r"[<>=!~;\[ ]", w)[0]) not in pins]
    assert not missing, f"not in requirements.lock (run `make lock`): {missing}"


def test_the_environment_is_the_lock_files():
    drifted = {}
    for name, pinned in _pins().items():
        try:
            have = version(name)
        except PackageNotFoundError:
            have = None
        if have != pinned:
            drifted[name] = (pinned, have)
    assert not drifted, f"installed versions differ from requirements.lock: {drifted}"
