"""`python -m bench`: every bench with what it measures (its docstring's first line);
`python -m bench NAME [SUB] [ARGS]` runs the bench of that name (`NAME --help`: its subcommands).

Every bench is a few functions over one harness (bench/harness.py: the claim sets, warm-up and
turn-taking beside a baseline, timing percentiles, the Markdown table and JSON, the command line),
so a figure's command in bench/RESULTS.md reads the same way for every bench.
"""

from __future__ import annotations

import ast
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def benches() -> dict[str, str]:
    """name -> the first line of its docstring, for every runnable bench (a script with a main)."""
    out = {}
    for path in sorted(HERE.glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            continue  # not a bench
        doc = (ast.get_docstring(tree) or "").strip().splitlines()
        out[path.stem] = doc[0] if doc else ""
    return out


def main(argv: list[str]) -> int:
    found = benches()
    if not argv or argv[0] in ("-h", "--help", "list"):
        width = max(map(len, found))
        for name, line in found.items():
            print(f"{name:<{width}}  {line}")
        print(f"\npython -m bench NAME [ARGS]   ({len(found)} benches; NAME --help for each)")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in found:
        print(f"error: no bench named {name!r} (python -m bench lists them)", file=sys.stderr)
        return 2
    sys.argv = [str(HERE / f"{name}.py"), *rest]
    sys.path.insert(0, str(HERE.parent))
    try:
        runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            return e.code or 0
        print(e.code, file=sys.stderr)  # SystemExit("error: ..."): the one line, as Python would
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
