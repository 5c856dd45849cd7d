"""Print the import graph's cycles of the package laid out in argv[1], as JSON.

Run in a fresh interpreter by tests/test_architecture.py, never imported by a test: grimp finds
`perspect` through the import system, and a process where the editable install already imported
it would read the repository's `perspect/` folder, where the mapped subpackages (`indexer/`,
`retriever/`, ...) are not, and miss every cycle through them. The output also says where the
package was found and which modules the graph holds, so the test can check it read the layout.
"""

from __future__ import annotations

import importlib.util
import json
import sys


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph has a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(edges.get(w, ())))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def main(layout: str) -> None:
    sys.path.insert(0, layout)
    assert "perspect" not in sys.modules, "perspect was imported before the graph was built"
    import grimp

    spec = importlib.util.find_spec("perspect")
    graph = grimp.build_graph("perspect", cache_dir=None)  # imports inside functions count
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    print(
        json.dumps(
            {
                "found_at": list(spec.submodule_search_locations or []),
                "modules": sorted(graph.modules),
                "cycles": [c for c in strongly_connected(edges) if len(c) > 1],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
