from __future__ import annotations

import json

import pytest

from perspect.core.errors import InputError
from perspect.indexer.news import read_news
from perspect.indexer.readers import normalize_text, read_pool

from .conftest import NEWS, PERSPECTIVES, write_json, write_jsonl


def test_perspectrum_pool_keeps_ids_and_metadata(tmp_path):
    rep = read_pool(write_json(tmp_path / "p.json", PERSPECTIVES))
    assert [i.id for i in rep.items] == ["1", "2", "3", "4", "5", "6"]
    assert rep.items[0].metadata == {"source": "test"}
    assert not rep.errors


def test_jsonl_csv_tsv_txt(tmp_path):
    (tmp_path / "a.csv").write_text("doc,body,topic\nx1,First text,law\nx2,Second text,tax\n")
    rep = read_pool(tmp_path / "a.csv", id_field="doc", text_field="body")
    assert [(i.id, i.text, dict(i.metadata)) for i in rep.items] == [
        ("x1", "First text", {"topic": "law"}),
        ("x2", "Second text", {"topic": "tax"}),
    ]
    (tmp_path / "a.tsv").write_text("id\ttext\n7\tTabbed text\n")
    assert read_pool(tmp_path / "a.tsv").items[0].id == "7"
    write_jsonl(tmp_path / "a.jsonl", [{"id": "j", "text": "Json line", "lang": "en"}])
    assert read_pool(tmp_path / "a.jsonl").items[0].metadata == {"lang": "en"}
    (tmp_path / "a.txt").write_text("one per line\n\nsecond line\n")
    a = read_pool(tmp_path / "a.txt").items
    (tmp_path / "b.txt").write_text("second line\none per line\n")
    b = read_pool(tmp_path / "b.txt").items
    assert len(a) == 2 and {i.id for i in a} == {i.id for i in b}  # content-derived, order-free


def test_normalisation_and_duplicates(tmp_path):
    assert normalize_text("  Cafe\u0301   au\tlait \n") == "Café au lait"
    rows = [
        {"id": 1, "text": "Same  text"},
        {"id": 2, "text": "same text"},
        {"id": 1, "text": "other"},
    ]
    rep = read_pool(write_jsonl(tmp_path / "d.jsonl", rows))
    assert [i.id for i in rep.items] == ["1", "2"]
    assert rep.items[0].text == "Same text"
    assert rep.duplicate_ids == ["1"] and rep.duplicate_texts == 1


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.jsonl", b"  \n", "the file is empty"),
        ("bin.jsonl", b"\x00\x01\x02binary", "binary"),
        ("latin.txt", "ok line\ncaf\u00e9\n".encode("latin-1"), "not valid utf-8"),
        ("broken.json", b'[{"id": 1, "text": "x"}', "malformed JSON"),
    ],
)
def test_bad_files_raise_with_reason(tmp_path, name, content, reason):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(InputError) as e:
        read_pool(tmp_path / name).check()
    assert reason in str(e.value)
    assert name in str(e.value)


def test_wrong_encoding_names_the_line(tmp_path):
    (tmp_path / "latin.txt").write_bytes("ok line\ncaf\u00e9\n".encode("latin-1"))
    with pytest.raises(InputError) as e:
        read_pool(tmp_path / "latin.txt")
    assert e.value.line == 2


def test_bad_records_reported_with_line_and_refused(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(
        '{"id": 1, "text": "fine"}\n{"id": 2, "text": \n{"id": 3}\n{"id": 4, "text": " "}\n'
    )
    rep = read_pool(p)
    assert [i.id for i in rep.items] == ["1"]
    assert [(e.line, e.reason.split(":")[0]) for e in rep.errors] == [
        (2, "malformed JSON"),
        (3, "missing text field (text/perspective/evidence)"),
        (4, "empty text"),
    ]
    with pytest.raises(InputError) as e:
        rep.check()
    assert "bad.jsonl:2" in str(e.value) and "--skip-bad" in str(e.value)
    rep.check(skip_bad=True)  # the good record survives when the user asks to skip


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_pool(tmp_path / "nope.json")


def test_news_sentences_keep_article_metadata(tmp_path):
    rep = read_news(write_jsonl(tmp_path / "n.jsonl", NEWS))
    texts = [i.text for i in rep.items]
    assert "Dr. Smith said pets feel pain." in texts  # the abbreviation does not split
    first = rep.items[0]
    assert first.id == "a1#0"
    assert dict(first.metadata) == {
        "article_id": "a1",
        "title": "Parliament debates animal law",
        "outlet": "Daily Planet",
        "date": "2026-01-02",
        "url": "https://example.org/a1",
        "leaning": "unrated",  # nobody rated the outlet: never a guess
        "position": 0,
    }
    assert rep.items[-1].metadata["outlet"] == "The Sun"
    assert [i.metadata["position"] for i in rep.items if i.metadata["article_id"] == "a1"] == [
        0,
        1,
        2,
    ]


def test_news_folder_of_text_files(tmp_path):
    d = tmp_path / "news"
    d.mkdir()
    (d / "story.md").write_text("# A headline\nFirst sentence here. Second one there.\n")
    (d / "other.txt").write_text("Only one sentence.")
    rep = read_news(d)
    assert {i.id for i in rep.items} == {"story#0", "story#1", "other#0"}
    by_id = {i.id: i for i in rep.items}
    assert by_id["story#0"].text == "First sentence here."
    assert by_id["story#1"].metadata["title"] == "A headline"
    assert "title" not in by_id["other#0"].metadata


def test_news_article_without_text_is_an_error(tmp_path):
    rep = read_news(write_jsonl(tmp_path / "n.jsonl", [{"id": "x", "title": "t"}]))
    assert rep.errors and "no text" in rep.errors[0].reason


def test_news_jsonl_gz_keeps_leaning_and_topic(tmp_path):
    """The AllSides set ships gzipped with each outlet's leaning and a topic: both reach every
    sentence; AllSides' five grades fold to three, anything else is "unrated"."""
    import gzip

    from perspect.indexer.news import leaning_of, read_news

    rows = [
        {"id": "x1", "title": "T", "outlet": "CNN (Web News)", "leaning": "left",
         "topic": "guns", "text": "Guns kill people every day. Laws could stop that."},
        {"id": "x2", "outlet": "Fox Online News", "leaning": "right",
         "text": "Gun laws do not stop criminals from getting guns."},
        {"id": "x3", "outlet": "Reuters", "leaning": "center", "text": "A vote is due on Monday."},
        {"id": "x4", "outlet": "Blog", "text": "Nobody rated this outlet at all, ever."},
    ]  # fmt: skip
    path = tmp_path / "articles.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    rep = read_news(path)
    by = {it.id: it.metadata for it in rep.items}
    assert by["x1#0"]["leaning"] == "left" and by["x1#1"]["topic"] == "guns"
    assert by["x2#0"]["leaning"] == "right" and by["x3#0"]["leaning"] == "centre"
    assert by["x4#0"]["leaning"] == "unrated"
    assert read_news(path, default_leaning="lean right").items[-1].metadata["leaning"] == "right"
    assert [leaning_of(v) for v in ("Lean Left", "CENTRE", "far-left", None)] == [
        "left", "centre", "unrated", "unrated",
    ]  # fmt: skip


def test_a_damaged_gzip_is_refused_in_one_line(tmp_path):
    from perspect.indexer.news import read_news

    path = tmp_path / "articles.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    with pytest.raises(InputError, match="not a readable gzip file"):
        read_news(path)
