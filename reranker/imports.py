"""One lock around the first imports of transformers and peft.

Why: the factory opens a search's models on threads (perspect.reranker.factory.load), and
transformers' lazy modules raise ImportError ("cannot import name 'AutoModel'") when two threads
import them at once. Seen with a bundle whose ONNX graphs were not exported yet, so that every
model fell back to PyTorch at the same moment; with graphs, nothing imports them at all.
"""

from __future__ import annotations

import threading

LOCK = threading.RLock()
