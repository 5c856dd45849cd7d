"""The ground floor: imports nothing else of Perspect's, so every floor above can use it (the
contract is in pyproject.toml, checked by tests/test_architecture.py).

Its rooms, by concern:

- here: the vocabulary every floor shares: `errors`, `paths` (where indexes, models and the cache
  live), `types` (items, hits, the query), `result` (a search's typed answer), `progress` (the
  Reporter protocol) and `service` (what the terminal UI asks of a search engine);
- `index`: the on-disk index format (layout and versions, manifest, integrity, item store,
  evidence links, stance states, readers' corrections, the index configuration);
- `model`: the model bundle's format and runtime (bundle, ONNX Runtime, tokenizers) and the
  fitted decisions read from a model's manifest;
- `datasets`: PERSPECTRUM and ClaimDiff readers, fetching, metrics, negation, reference rows;
- `presentation`: renderings, progress bars and terminal preparation that only the CLI, the
  TUI and the server use.

`index`, `model` and `datasets` are independent of one another; each reads only the shared
vocabulary here, and `presentation` sits above them (contracts in pyproject.toml).
"""
