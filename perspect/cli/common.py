"""What every command group shares: the console, the common options, default data folders."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DEFAULT_DATA = Path("data") / "perspectrum"
DEFAULT_CLAIMDIFF = Path("data") / "claimdiff"


def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def engine_args(args: argparse.Namespace) -> None:
    """`--es-url` for this run (credentials in it are used, never stored; the index keeps the
    URL without them). `--backend` is checked by `api.check_engine`."""
    if getattr(args, "es_url", None):
        os.environ["PERSPECT_ES_URL"] = args.es_url


def add_backend(p: argparse.ArgumentParser, build: bool = False) -> None:
    p.add_argument(
        "--backend",
        choices=["embedded", "elasticsearch"],
        default="embedded" if build else None,
        help="where the retrievers live: embedded (tantivy, faiss, PLAID; default) or an "
        "Elasticsearch 8.18+/9.x cluster (credentials: PERSPECT_ES_API_KEY, or PERSPECT_ES_USER "
        "and PERSPECT_ES_PASSWORD)"
        if build
        else "check that the index lives on this backend",
    )
    p.add_argument(
        "--es-url",
        metavar="URL",
        help="Elasticsearch URL (default: $PERSPECT_ES_URL, else the one the index was built with)",
    )


def add_home(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", help="folder holding indexes (default: $PERSPECT_HOME or ./indexes)")


def add_pool_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--perspectives", action="append", metavar="PATH", help="perspective pool file")
    p.add_argument("--evidence", action="append", metavar="PATH", help="evidence pool file")
    p.add_argument(
        "--news", action="append", metavar="PATH", help="news articles (JSONL or folder)"
    )
    p.add_argument(
        "--documents",
        action="append",
        metavar="PATH",
        help="your own sources, mined for perspectives: a folder of .txt/.md/.html files, a "
        "JSONL of articles (id, title, outlet, date, url, text), or the URL of a page or feed",
    )
    p.add_argument(
        "--format",
        choices=["json", "jsonl", "csv", "tsv", "txt"],
        help="input format (default: from the file extension)",
    )
    p.add_argument("--id-field", help="column/key holding the id (default: id, pId, eId, ...)")
    p.add_argument("--text-field", help="column/key holding the text (default: text, ...)")
    p.add_argument(
        "--skip-bad",
        action="store_true",
        help="index the good records of a file and skip bad ones (default: refuse)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
