"""The news a reader meets (issue 73), judged with the judged set's form: every news sentence an
answer shows under a perspective (or under the claim), against that perspective (or the claim):
strengthens / weakens / neither, by two judges apart, blind to the relation shown. For claims
written for the reader bench (none tuned on).

    python -m bench news run --index default --label news-after [--home DIR]
    python -m bench news items --out DIR        # unjudged shown news, as judge batches
    python -m bench news tally --judgments DIR  # (the bearing bench's tally: one label file)
    python -m bench news score                  # claims with news, two leanings, precision
    python -m bench news add --index default [--home DIR] [--articles 500]  # a day's news
    python -m bench news own --index default [--home DIR]   # a reader's own article, added

Prints per run: the claims with news, with news from two rated leanings, the sentences shown and
the share of them a judge reads as the relation shown (right), the search's p50/p95 with the news
pool. Runs are kept in bench/judged/runs/ as ids, relations and leanings (the texts are
third-party, kept outside the repository like bench/bearing.py's).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import bearing, harness  # noqa: E402
from bench.bearing import _key, _labels, tally, write_batches  # noqa: E402
from bench.harness import ARGUMENT_CLAIMS, CLAIMS  # noqa: E402

# beside bench/bearing.py's runs, in folders of their own: those read every run in theirs
RUNS, TEXTS = bearing.RUNS / "news", bearing.TEXTS / "news"


def run(args) -> int:
    from perspect.api import Perspect

    out = []
    with Perspect.open(args.index, home=args.home) as p:
        if args.baseline:  # the previous main's news: the relation model's cuts, the claim's only
            from perspect.reranker.relation_judge import RelationJudge

            stage = p.engine().news_stage
            stage.comparator, stage.per_cluster = RelationJudge.of(p.engine().relation), 0
        p.search(CLAIMS[0], k=args.k)  # warm: the first search of a process loads the models
        for claim in CLAIMS + ARGUMENT_CLAIMS:
            res = p.search(claim, k=args.k)
            shown = {c.representative.id: c for c in res.clusters}
            news = []
            for n in res.news:
                c = shown.get(n.cluster) if n.cluster else None
                target = c.representative.text if c is not None and c.stance != "unclear" else None
                news.append({
                    "id": n.id, "text": n.text, "title": n.metadata.get("title") or "",
                    "target": target or claim,
                    "relation": n.cluster_relation if target else n.relation,
                    "leaning": n.leaning, "outlet": n.metadata.get("outlet"),
                })  # fmt: skip
            out.append({"claim": claim, "news": news, "spread": res.spread.to_json(),
                        "took_ms": res.took_ms, "clusters": len(res.clusters)})  # fmt: skip
            print(f"{claim[:60]}: {len(news)} news, {res.spread.line}", flush=True)
    TEXTS.mkdir(parents=True, exist_ok=True)  # outside the repository: the texts are third-party
    (TEXTS / f"{args.label}.json").write_text(json.dumps(out, indent=0) + "\n")
    RUNS.mkdir(parents=True, exist_ok=True)
    ids = [{**a, "news": [{"id": n["id"], "relation": n["relation"], "leaning": n["leaning"],
                           "key": "rn:" + _key(n["target"], n["text"])} for n in a["news"]]}
           for a in out]  # fmt: skip
    path = RUNS / f"{args.label}.json"
    path.write_text(json.dumps(ids, indent=0) + "\n")
    print(f"-> {path} (texts: {TEXTS})")
    return 0


def items(args) -> int:
    known = _labels()
    todo = {}
    for path in sorted(TEXTS.glob("*.json")):
        for a in json.loads(path.read_text()):
            for n in a["news"]:
                key = "rn:" + _key(n["target"], n["text"])
                if key not in known:
                    todo[key] = {"id": key, "q": "cn", "claim": n["target"], "title": n["title"],
                                 "sentence": n["text"]}  # fmt: skip
    write_batches(list(todo.values()), args.out, args.size, seed=73)
    return 0


def score(args) -> int:
    import numpy as np

    labels = _labels()
    verb = {"strengthens": "strengthens", "weakens": "weakens"}
    print("| run | claims | with news | two leanings | shown | judged | right | neither | "
          "opposite | p50 ms | p95 ms |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(RUNS.glob("*.json")):
        rows = json.loads(path.read_text())
        with_news = sum(bool(a["news"]) for a in rows)
        two = sum(len({n["leaning"] for n in a["news"]} - {"unrated"}) >= 2 for a in rows)
        shown = [n for a in rows for n in a["news"]]
        judged = [(n, labels[n["key"]]) for n in shown if n["key"] in labels]
        right = sum(verb.get(lab) == n["relation"] for n, lab in judged)
        neither = sum(lab == "neither" for _, lab in judged)
        took = np.array([a["took_ms"] for a in rows])
        k = max(1, len(judged))
        print(f"| {path.stem} | {len(rows)} | {with_news} ({with_news / len(rows):.0%}) | "
              f"{two} ({two / len(rows):.0%}) | {len(shown)} | {len(judged)} | "
              f"{right / k:.1%} | {neither / k:.1%} | {(len(judged) - right - neither) / k:.1%} | "
              f"{np.percentile(took, 50):.0f} | {np.percentile(took, 95):.0f} |")  # fmt: skip
    return 0


CAR_FREE = """<html><head><title>Why our city centre should go car-free</title></head><body><article>
<h1>Why our city centre should go car-free</h1>
<p>Banning cars from the city centre would make the air cleaner for everyone who lives and works
there. Traffic fumes are the main source of the nitrogen dioxide that sends children with asthma
to hospital every winter.</p>
<p>When Pontevedra closed its centre to cars, road deaths fell to zero and the shops on its main
streets gained customers, because people on foot stop and spend more than drivers passing
through.</p>
<p>A centre without cars frees the space now taken by parking for trees, benches and cycle lanes,
and it makes walking safe again for older people and children.</p>
<p>Delivery vans and disabled drivers can still be given permits at fixed hours, so nobody who
truly needs a vehicle is shut out.</p></article></body></html>"""


def own(args) -> int:
    """A reader's own article (written here, arguing for car-free centres), added with `perspect
    news add` from a local page to a copy of the index: is it shown under "Cities should ban cars
    from their centres", and how does the news judge read its sentences?"""
    import functools
    import http.server
    import os
    import shutil
    import socketserver
    import tempfile
    import threading

    from perspect import api
    from perspect.api import Perspect

    work = Path(tempfile.mkdtemp(prefix="perspect-own-news-"))
    src = Path(args.home or ROOT / "indexes") / args.index
    shutil.copytree(src, work / args.index, copy_function=os.link,
                    ignore=shutil.ignore_patterns("*.lock", "LOCK"))  # fmt: skip
    (work / "site").mkdir()
    (work / "site" / "carfree.html").write_text(CAR_FREE)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=work / "site")
    srv = socketserver.TCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    claim = "Cities should ban cars from their centres"
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/carfree.html"
        api.add_news(args.index, [url], home=work, leaning="centre")
        with Perspect.open(args.index, home=work) as p:
            res = p.search(claim, k=args.k)
            stage = p.engine().news_stage
            mine = [h for h in stage._retrieve(claim, 40)[0] if h.metadata.get("url") == url]
            probs = stage.comparator.probabilities([(h.text, claim) for h in mine])
        shown = [n for n in res.news if n.metadata.get("url") == url]
        print(f"shown under the claim's answer: {len(shown)} of its sentences")
        for h, q in zip(mine, probs, strict=True):
            print(f"  retrieved, P(bears) {q[1] + q[2]:.2f}: {h.text[:80]}")
    finally:
        srv.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def day_of_news(n: int, data: Path) -> list[dict]:
    """`n` real articles none of the pools holds: PolitiFact rulings (PolitiHop, ../shared), each
    with a leaning so that the add exercises it."""
    import csv

    csv.field_size_limit(1 << 30)
    out = []
    for name in ("politihop_valid.tsv", "politihop_train.tsv"):
        with open(data / name, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                sents = json.loads(row["ruling"]) if row["ruling"].startswith("[") else []
                if len(sents) >= 5 and len(out) < n:
                    out.append({"id": f"day-{row['article_id']}", "title": row["statement"][:120],
                                "outlet": "PolitiFact", "leaning": "centre", "date": "2020-12-01",
                                "text": "\n\n".join(" ".join(sents[i : i + 4])
                                                      for i in range(0, len(sents), 4))})  # fmt: skip
    return out


def add(args) -> int:
    """A day's news added with `perspect index add --news` to a copy of the index while two
    clients search it through `perspect serve`: the add's time, when its sentences are found,
    and the clients' searches meanwhile (none may fail)."""
    import os
    import shutil
    import subprocess
    import tempfile
    import threading
    import time

    import httpx
    import numpy as np

    arts = day_of_news(args.articles, args.data)
    work = Path(tempfile.mkdtemp(prefix="perspect-news-add-"))
    src = Path(args.home or ROOT / "indexes") / args.index
    shutil.copytree(src, work / args.index, copy_function=os.link,
                    ignore=shutil.ignore_patterns("*.lock", "LOCK"))  # fmt: skip
    day = work / "day.jsonl"
    day.write_text("".join(json.dumps(a) + "\n" for a in arts))
    port = harness.free_port()
    perspect = str(Path(sys.executable).with_name("perspect"))
    server = subprocess.Popen([perspect, "serve", "--index", args.index, "--home", str(work),
                               "--port", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        harness.wait_ready(url, server, timeout=300)
        stop, took, errors = threading.Event(), [], []

        def client(i: int) -> None:
            claims = CLAIMS + ARGUMENT_CLAIMS
            j = i
            while not stop.is_set():
                t = time.perf_counter()
                r = httpx.post(
                    f"{url}/search", json={"claim": claims[j % len(claims)]}, timeout=120
                )
                (took if r.status_code == 200 else errors).append(time.perf_counter() - t)
                j += 2

        threads = [threading.Thread(target=client, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        time.sleep(5)
        probe = json.loads(day.read_text().splitlines()[-1])["text"].split("\n\n")[0][:200]
        t0 = time.perf_counter()
        proc = subprocess.run([perspect, "index", "add", "--name", args.index, "--home", str(work),
                               "--news", str(day), "-q", "--skip-bad"], capture_output=True,
                              text=True)  # fmt: skip
        added = time.perf_counter() - t0
        found = None
        while time.perf_counter() - t0 < 300 and found is None:
            r = httpx.post(f"{url}/search", json={"claim": probe, "pool": "news",
                                                  "retriever": "bm25", "k": 3}, timeout=60)  # fmt: skip
            hits = r.json().get("hits", []) if r.status_code == 200 else []
            if any(h["id"].startswith("day-") for h in hits):
                found = time.perf_counter() - t0
            else:
                time.sleep(0.5)
        during = len(took)
        stop.set()
        for t in threads:
            t.join()
        print(json.dumps({
            "articles": len(arts), "add_exit": proc.returncode, "add_s": round(added, 1),
            "searchable_after_s": None if found is None else round(found, 1),
            "client_searches": during, "client_errors": len(errors),
            "client_p50_ms": round(float(np.percentile(took, 50)) * 1000) if took else None,
            "client_p95_ms": round(float(np.percentile(took, 95)) * 1000) if took else None,
            "add_stderr": proc.stderr.strip()[-300:],
        }))  # fmt: skip
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _args(*more):
    """A subcommand's own options: `--k` (clusters shown) and whatever `more` adds."""

    def add(p) -> None:
        p.add_argument("--k", type=int, default=10)
        for name, kw in more:
            p.add_argument(name, **kw)

    return add


def main(argv=None) -> int:
    where = ("index", "home")
    return harness.commands(
        __doc__,
        {
            "run": (
                run,
                where,
                _args(("--label", dict(required=True)), ("--baseline", dict(action="store_true"))),
            ),
            "items": (
                items,
                (),
                _args(
                    ("--out", dict(type=Path, required=True)),
                    ("--size", dict(type=int, default=250)),
                ),
            ),
            "tally": (tally, (), _args(("--judgments", dict(type=Path, required=True)))),
            "score": (score, (), None),
            "own": (own, where, _args()),
            "add": (
                add,
                where,
                _args(
                    ("--articles", dict(type=int, default=500)),
                    ("--data", dict(type=Path, default=harness.SHARED / "politihop")),
                ),
            ),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
