"""The reader's documents as a pool: folders of .txt/.md/.html and JSONL articles split into
sentences with their provenance, `perspect index add --documents`, `index status` counting
articles and sentences, a sentence opened in its article, and deletes. BM25 indexes the tests
write (the mining itself, with the shipped models: tests/test_mining.py)."""

from __future__ import annotations

import json

import pytest

from perspect.core.errors import NotInIndex, PerspectError
from tests.conftest import PERSPECTIVES, run_cli, write_json, write_jsonl

PAGE = """<html><head><title>Zoos are prisons - The Ledger</title>
<meta property="og:site_name" content="The Ledger">
<meta name="date" content="2025-03-04">
<link rel="canonical" href="https://ledger.example/zoos"></head>
<body><nav>Home | World | Sport</nav><article><h1>Zoos are prisons</h1>
<p>Zoos should be closed because they confine wild animals to small enclosures for life.</p>
<p>Keeping elephants in captivity shortens their lives by decades, studies found.</p>
</article><footer>Copyright 2025</footer></body></html>"""

ARTICLES = [
    {
        "id": "herald-1",
        "title": "Council debates the city zoo",
        "outlet": "The Herald",
        "date": "2025-02-01",
        "url": "https://herald.example/zoo",
        "text": "The council met on Tuesday to discuss the zoo. Zoos protect species that "
        "would otherwise vanish.\n\nA vote is expected in March.",
    },
]


def _folder(tmp_path):
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text("# Against zoos\nZoos cause animals stress. Close them.\n")
    (d / "sub" / "b.md").write_text("Zoos fund conservation work in the wild.")
    (d / "c.html").write_text(PAGE)
    (d / "notes.csv").write_text("ignored,file\n")
    return d


def test_a_folder_of_text_markdown_and_pages_becomes_sentences_with_provenance(tmp_path):
    from perspect.indexer.news import read_documents, read_news

    rep = read_documents(_folder(tmp_path))
    by_id = {it.id: it for it in rep.items}
    assert set(by_id) == {"a#0", "a#1", "sub/b#0", "c#0", "c#1"}, sorted(by_id)
    assert by_id["a#1"].text == "Close them." and by_id["a#1"].metadata["title"] == "Against zoos"
    assert by_id["a#1"].metadata["position"] == 1 and by_id["a#1"].metadata["article_id"] == "a"
    page = by_id["c#0"].metadata
    assert page["title"] == "Zoos are prisons" and page["outlet"] == "The Ledger"
    assert page["url"] == "https://ledger.example/zoos" and page["date"] == "2025-03-04"
    assert "Home" not in by_id["c#0"].text  # the page's navigation is not an article sentence
    # news reads .txt / .md only, as before
    assert not any(it.id.startswith("c#") for it in read_news(_folder(tmp_path / "n")).items)


def test_a_folder_without_documents_is_one_clear_error(tmp_path):
    from perspect.core.errors import InputError
    from perspect.indexer.news import read_documents

    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no \.txt, \.md or \.html files"):
        read_documents(tmp_path / "empty")


def test_index_add_documents_status_and_context(tmp_path):
    from perspect import api

    home = tmp_path / "home"
    persp = write_json(tmp_path / "p.json", PERSPECTIVES)
    run_cli("index", "build", "--name", "mine", "--perspectives", str(persp), "--home", str(home))
    docs = write_jsonl(tmp_path / "articles.jsonl", ARTICLES)
    add = run_cli("index", "add", "--name", "mine", "--documents", str(docs),
                  "--documents", str(_folder(tmp_path)), "--home", str(home))  # fmt: skip
    assert "documents: added 8" in add.stdout, add.stdout
    status = json.loads(run_cli("index", "status", "--json", "--home", str(home)).stdout)
    pool = status["indexes"][0]["pools"]["documents"]
    assert pool["count"] == 8 and pool["articles"] == 4 and pool["retrievers"] == ["bm25"]
    table = run_cli("index", "status", "--home", str(home)).stdout
    assert "documents" in table and "articles" in table  # "8 sentences of 4 articles", wrapped

    with api.Perspect.open("mine", home=home) as p:
        ctx = p.context("herald-1#1")
        assert ctx.sentences[ctx.focus] == "Zoos protect species that would otherwise vanish."
        assert ctx.sentences[0].startswith("The council met") and len(ctx.sentences) == 3
        assert ctx.source.outlet == "The Herald" and ctx.source.url == "https://herald.example/zoo"
        assert ctx.to_json()["schema"] == "perspect.context/1"
        with pytest.raises(NotInIndex, match="no documents sentence 'herald-1#9'"):
            p.context("herald-1#9")
        with pytest.raises(PerspectError, match="holds no articles"):
            p.context("1", pool="perspectives")
        hits = p.retrieve("zoos protect species", pool="documents", k=3)
        assert hits.hits[0].id == "herald-1#1"

    api.delete_from_index("mine", "documents", ["a#0", "a#1"], home=home)
    _, rows = api.index_status("mine", home)
    assert rows[0]["pools"]["documents"]["count"] == 6


def test_documents_need_a_path_or_a_url(tmp_path):
    home = tmp_path / "home"
    persp = write_json(tmp_path / "p.json", PERSPECTIVES)
    run_cli("index", "build", "--name", "mine", "--perspectives", str(persp), "--home", str(home))
    r = run_cli("index", "add", "--name", "mine", "--documents", str(tmp_path / "nope"),
                "--home", str(home), ok=False)  # fmt: skip
    assert r.returncode != 0 and "no such file or folder" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 2
