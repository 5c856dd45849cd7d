"""`perspect eval --reference`: published rows are validated before the run and printed as given."""

import json

import pytest

from perspect.core.datasets.reference_rows import cell, load_reference
from perspect.core.errors import InputError


def write(tmp_path, obj, name="ref.json"):
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")
    return p


def test_rows_load_with_partial_tasks(tmp_path):
    rows = load_reference(
        write(
            tmp_path,
            {
                "rows": [
                    {"system": "IR", "T1": {"precision": 40, "recall": 30.5, "f1": 34.6}},
                    {"system": " human ", "T3": {"f1": 90}, "T5": {"f1": 12.25}},
                ]
            },
        )
    )
    assert [r.system for r in rows] == ["IR", "human"]
    assert cell(rows[0].scores, "T1") == "40.0 / 30.5 / 34.6"
    assert cell(rows[0].scores, "T4") == "—"
    assert cell(rows[1].scores, "T3") == "— / — / 90.0"
    assert cell(rows[1].scores, "T5") == "12.2"
    assert rows[1].to_json() == {"system": "human", "T3": {"f1": 90.0}, "T5": {"f1": 12.25}}


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "malformed JSON"),
        ({"rows": []}, "expected"),
        ([{"system": "IR"}], "expected"),
        ({"rows": [{"T1": {"f1": 3}}]}, "non-empty 'system'"),
        ({"rows": [{"system": "IR"}]}, "without any task score"),
        ({"rows": [{"system": "IR", "T6": {"f1": 3}}]}, "unknown keys"),
        ({"rows": [{"system": "IR", "T1": {"precision": 3}}]}, "must be an object with f1"),
        ({"rows": [{"system": "IR", "T1": {"f1": 0.4, "acc": 1}}]}, "must be an object with f1"),
        ({"rows": [{"system": "IR", "T2": {"f1": "55"}}]}, "must be a number"),
        ({"rows": [{"system": "IR", "T2": {"f1": 155}}]}, "percentages"),
        ({"rows": [{"system": "IR", "T5": {"f1": True}}]}, "must be a number"),
    ],
)
def test_bad_files_name_the_problem(tmp_path, content, message):
    with pytest.raises(InputError, match=message) as e:
        load_reference(write(tmp_path, content))
    assert "ref.json" in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such reference file"):
        load_reference(tmp_path / "nope.json")
