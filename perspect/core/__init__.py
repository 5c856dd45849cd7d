"""The ground floor: types, results, errors, paths, the on-disk index format, dataset readers.

Imports nothing else of Perspect's, so every floor above can use it (the contract is in
pyproject.toml, checked by tests/test_architecture.py)."""
