"""The settings of a server: where it listens, what it serves, and the limits of one request."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

from perspect.core.errors import PerspectError

ENV = "PERSPECT_SERVE_CONFIG"  # how `--workers N` hands the settings to each worker process


@dataclass(frozen=True)
class ServeConfig:
    index: str = "default"
    home: str | None = None
    model: str | None = None  # pair model folder (default: the bundle's)
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    max_body_bytes: int = 1_000_000  # 413 past it
    max_claim_chars: int = 1_000
    max_k: int = 64
    time_budget_s: float = 30.0  # a search (queue, model loading and all) past it: 504
    concurrent_searches: int = 2  # searches run at once per worker (the rest queue)
    max_news_inputs: int = 100  # URLs or articles in one POST /indexes/{name}/news
    fetch_timeout_s: float = 10.0
    writer_wait_s: float = 120.0  # how long an add waits for another writer of the index
    warm_fast: bool = True  # load the --fast engine too at start-up
    idle_fill: bool = True  # keep the perspectives' lower states while no search runs
    access_log: bool = False
    ray: str | None = None  # a Ray cluster's address ("auto", HOST:6379): searches run there
    shards: int | None = None  # with `ray`: shards of each pool (default: one a node)
    replicas: int = 1  # with `ray`: the pipeline's replicas at least (autoscaled up to one a node)

    def __post_init__(self) -> None:
        for name in (
            "workers",
            "max_body_bytes",
            "max_claim_chars",
            "max_k",
            "concurrent_searches",
        ):
            if getattr(self, name) < 1:
                raise PerspectError(f"--{name.replace('_', '-')} must be at least 1")
        if self.max_k > 1000:  # the searcher's MAX_K: past it, a k the description allows fails
            raise PerspectError(f"--max-k must be at most 1000, got {self.max_k}")
        if not 0 < self.port < 65536:
            raise PerspectError(f"--port must be in 1..65535, got {self.port}")
        if self.ray is not None and self.workers > 1:
            raise PerspectError(
                "--workers and --ray do not go together",
                hint="with --ray the cluster's replicas run the searches: one front process",
            )
        if (self.shards is not None and self.shards < 1) or self.replicas < 1:
            raise PerspectError("--shards and --replicas must be at least 1")
        if self.time_budget_s <= 0:
            raise PerspectError(f"the time budget must be positive, got {self.time_budget_s}")

    def to_env(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_env(cls) -> ServeConfig:
        raw = os.environ.get(ENV)
        if not raw:
            raise PerspectError(f"${ENV} is not set", hint="start the server with perspect serve")
        return cls(**json.loads(raw))
