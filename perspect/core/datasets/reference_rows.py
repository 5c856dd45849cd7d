"""Published rows to print beside `perspect eval perspectrum` (`--reference FILE`).

Why a file and not constants: the paper's IR, IR+BERT and human rows cannot be fetched or checked
from a machine without internet, and a number typed from memory into the code would be printed as
fact forever. A person with the paper writes the rows once, with their source, and every run prints
them beside Perspect's own, labelled as they were given. Format:

    {"rows": [{"system": "IR (Chen et al. 2019, Table 3, test split)",
               "T1": {"precision": 46.8, "recall": 34.9, "f1": 40.0},
               "T5": {"f1": 10.2}}]}

Every task key is optional (a paper row may lack one); values are percentages, 0-100.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from perspect.core.errors import InputError

TASKS = ("T1", "T2", "T3", "T4")
PRF_KEYS = ("precision", "recall", "f1")


@dataclass(frozen=True)
class ReferenceRow:
    system: str
    scores: dict[str, dict[str, float]]  # task -> {"precision", "recall", "f1"}; T5 -> {"f1"}

    def to_json(self) -> dict:
        return {"system": self.system, **self.scores}


def _number(path: Path, where: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(str(path), f"{where} must be a number, got {v!r}")
    if not 0 <= v <= 100:
        raise InputError(str(path), f"{where} is {v}: scores are percentages, 0-100")
    return float(v)


def load_reference(path: str | Path) -> tuple[ReferenceRow, ...]:
    """The rows of a reference file, validated; an `InputError` names the first bad field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(str(path), "no such reference file") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise InputError(str(path), f"malformed JSON: {e.msg}", line=e.lineno) from None
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise InputError(str(path), 'expected {"rows": [{"system": ..., "T1": {...}}, ...]}')
    out = []
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, dict) or not str(row.get("system") or "").strip():
            raise InputError(str(path), "every row needs a non-empty 'system'", line=i, unit="row")
        unknown = set(row) - {"system", *TASKS, "T5"}
        if unknown:
            raise InputError(str(path), f"unknown keys {sorted(unknown)}", line=i, unit="row")
        scores: dict[str, dict[str, float]] = {}
        for task in (*TASKS, "T5"):
            if task not in row:
                continue
            cell, keys = row[task], PRF_KEYS if task != "T5" else ("f1",)
            if not isinstance(cell, dict) or not set(cell) <= set(keys) or "f1" not in cell:
                raise InputError(
                    str(path), f"{task} must be an object with f1 (and {keys})", line=i, unit="row"
                )
            scores[task] = {k: _number(path, f"row {i} {task}.{k}", v) for k, v in cell.items()}
        if not scores:
            raise InputError(str(path), "a row without any task score", line=i, unit="row")
        out.append(ReferenceRow(str(row["system"]).strip(), scores))
    return tuple(out)


def cell(scores: dict[str, dict[str, float]], task: str) -> str:
    """'P / R / F1' as the eval table prints it; missing parts are dashes."""
    v = scores.get(task)
    if v is None:
        return "—"
    if task == "T5":
        return f"{v['f1']:.1f}"
    return " / ".join(f"{v[k]:.1f}" if k in v else "—" for k in PRF_KEYS)
