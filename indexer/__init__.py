"""Pools to indexes: readers, the copy-on-write index layout, and the `Indexer` front door."""
