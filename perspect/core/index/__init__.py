"""The on-disk index format: versions and their layout, manifest and integrity, the item store,
the evidence links and stance states, readers' corrections, and the configuration an index keeps."""
