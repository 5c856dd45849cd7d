"""The requests and answers of the HTTP API as the OpenAPI description states them: every limit
the server enforces is a constraint of its request models (built from the server's settings),
and every status a route answers is listed with its body.

Why here and not in the routes: a limit checked in a route's code was invisible to clients (an
empty claim was valid by the description and answered 400), and a fuzzer built from the
description spent most of its requests on rules it could not know. The request models enforce
the limits themselves; a value outside one is a 400, a field of the wrong type a 422
(`perspect.serve.errors`).

Patterns use no `\\s`, `\\w` or `\\d`: Python, which the server and most clients' validators run,
and ECMA-262, which JSON Schema names, read those differently outside ASCII; the character
classes here are spelt out, so that both read them as the server does.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from perspect.core.index.config import NAME_RE
from perspect.core.types import MAX_CLAIM_CHARS, POOLS

RETRIEVERS = ("bm25", "dense", "colbert", "hybrid")


def _char_class(test, negate: bool = False) -> str:
    """A regex class of every code point `test` accepts, as ranges of literal characters."""
    out, start = [], None
    for c in range(sys.maxunicode + 2):
        ok = c <= sys.maxunicode and not 0xD800 <= c <= 0xDFFF and test(chr(c))
        if ok and start is None:
            start = c
        elif not ok and start is not None:
            end = c - 1
            out.append(_lit(start) if start == end else f"{_lit(start)}-{_lit(end)}")
            start = None
    return "[" + ("^" if negate else "") + "".join(out) + "]"


def _lit(c: int) -> str:
    return f"\\u{c:04x}" if c < 0x10000 and not chr(c).isalnum() else chr(c)


@functools.cache
def not_blank() -> str:
    """Some character that is not white space as `str.split` sees it (what the engine strips)."""
    return _char_class(str.isspace, negate=True)


@functools.cache
def a_letter() -> str:
    """Some letter as `str.isalpha` sees it: what makes a sentence of an article to compare."""
    return _char_class(str.isalpha)


def _whole(v: Any) -> Any:
    """9.0 is the integer 9 in JSON Schema (and in JSON): take it as such, as strict mode won't."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


class _Strict(BaseModel):
    # python-re: the patterns are matched by Python's `re`, as the engine reads the text
    model_config = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")


class ErrorBody(BaseModel):
    """Every error: one line of JSON."""

    error: str = Field(description="what is wrong, in one line")
    id: str | None = Field(None, description="a 500's id, under which the server logged it")


COMPARE_EXAMPLE = {
    "a": {"title": "Council backs shelters", "text": "The council approved new funding."},
    "b": {"title": "Shelters struggle", "text": "Shelters are underfunded. Adoptions fell."},
}


@dataclass(frozen=True)
class Requests:
    """The request models of one server (its limits)."""

    search: type[BaseModel]
    compare: type[BaseModel]
    news: type[BaseModel]
    job: type[BaseModel]
    correction: Any  # a side or a pair: SideCorrection | SameCorrection


def requests(max_claim_chars: int, max_k: int, max_news_inputs: int) -> Requests:
    claim_chars = min(max_claim_chars, MAX_CLAIM_CHARS)

    class SearchRequest(_Strict):
        model_config = ConfigDict(
            json_schema_extra={"examples": [{"claim": "animals should have lawful rights"}]}
        )
        claim: str = Field(
            min_length=1,
            max_length=claim_chars,
            pattern=not_blank(),
            description=f"the claim: at most {claim_chars:,} characters, not only white space",
        )
        k: Annotated[int, Field(ge=1, le=max_k), BeforeValidator(_whole)] | None = Field(
            None, description="at most this many clusters (hits when retrieval only)"
        )
        fast: bool = Field(False, description="int8 cross-encoders, bounded equivalence pairs")
        pool: Literal[POOLS] | None = Field(  # type: ignore[valid-type]
            None,
            description="retrieval only, from this pool (404 when the index has none)",
        )
        retriever: Literal[RETRIEVERS] | None = Field(  # type: ignore[valid-type]
            None,
            description="retrieval only, with this retriever (404 when the index or pool "
            "has none; hybrid needs two)",
        )

    class ArticleIn(_Strict):
        title: str = ""
        text: str = Field(  # as long as the body allows (413 past it)
            pattern=a_letter(),
            description="the article: a sentence needs a letter (Unicode L*), so the text does",
        )

    class CompareRequest(_Strict):
        model_config = ConfigDict(json_schema_extra={"examples": [COMPARE_EXAMPLE]})
        a: ArticleIn
        b: ArticleIn

    class NewsRequest(_Strict):
        model_config = ConfigDict(
            json_schema_extra={"examples": [{"articles": [COMPARE_EXAMPLE["a"]]}]}
        )
        articles: list[str | dict[str, Any]] = Field(
            min_length=1,
            max_length=max_news_inputs,
            description="URLs of pages or RSS/Atom feeds, or article objects (title, outlet, "
            "date, url, leaning, text); what cannot be added is one line of the report, not an "
            "error",
        )
        leaning: Literal["left", "centre", "center", "right", "unrated"] | None = Field(
            default=None,
            description="the outlets' leaning, for articles that name none (default unrated)",
        )

    class JobRequest(_Strict):
        model_config = ConfigDict(
            json_schema_extra={"examples": [{"claim": "animals should have lawful rights"}]}
        )
        claim: str = SearchRequest.model_fields["claim"]
        k: Annotated[int, Field(ge=1, le=max_k), BeforeValidator(_whole)] | None = Field(
            None, description="at most this many clusters"
        )
        fast: bool = Field(False, description="int8 cross-encoders, bounded equivalence pairs")

    class SideCorrection(_Strict):
        """A perspective put on a side of a claim (or off-topic)."""

        model_config = ConfigDict(
            json_schema_extra={
                "examples": [
                    {"claim": "Zoos should be closed", "perspective": "123", "side": "oppose"}
                ]
            }
        )
        claim: str = SearchRequest.model_fields["claim"]
        perspective: str = Field(min_length=1, max_length=200, description="a perspective's id")
        side: Literal["support", "oppose", "off-topic"] = Field(
            description="where the perspective belongs for this claim"
        )
        undo: bool = Field(False, description="take the correction back")

    class SameCorrection(_Strict):
        """Two perspectives that make one point, for a claim."""

        model_config = ConfigDict(
            json_schema_extra={"examples": [{"claim": "Zoos should be closed", "same": ["1", "2"]}]}
        )
        claim: str = SearchRequest.model_fields["claim"]
        same: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
            min_length=2, max_length=2, description="two perspective ids: one point"
        )
        undo: bool = Field(False, description="take the correction back")

    return Requests(
        SearchRequest, CompareRequest, NewsRequest, JobRequest, SideCorrection | SameCorrection
    )


# The path parameter `name` of an index: the pattern `perspect.core.index.config.check_name` applies
# (to the whole name: its `$` is the end of the name, as ECMA-262 reads it).
INDEX_NAME = NAME_RE.pattern

# Errors of a value, not of a type: 400 (a type, a missing or an unknown field: 422).
VALUE_ERRORS = {
    "string_too_short",
    "string_too_long",
    "string_pattern_mismatch",
    "greater_than_equal",
    "less_than_equal",
    "literal_error",
    "too_short",
    "too_long",
}


def bad_value(where: str, error: dict[str, Any]) -> str:
    """The one line for a value outside a stated limit (`where`: the field, e.g. "a.text")."""
    kind, ctx, got = error.get("type"), error.get("ctx") or {}, error.get("input")
    if where == "claim":
        if kind == "string_too_long":
            return f"claim is longer than {ctx.get('max_length')} characters"
        return "the claim is empty"
    if where == "k":
        if kind == "less_than_equal":
            return f"k must be in 1..{ctx.get('le')}, got {got!r}"
        return f"k must be at least 1, got {got!r}"
    if where in ("pool", "retriever"):
        return f"unknown {where} {got!r}: one of {ctx.get('expected')}"
    if where.endswith(".text"):
        name = where.split(".")[0]
        if kind == "string_too_long":
            return f"article {name} is over the body limit"
        return f"article {name}: no sentences in this article (its text has no letter)"
    if where == "name":
        return f"bad index name {got!r}: letters, digits, '.', '_' or '-' (at most 64)"
    if where == "articles":
        if kind == "too_short":
            return "no articles: pass URLs or article objects"
        return f"at most {ctx.get('max_length')} articles per request"
    return f"{where}: {error.get('msg', 'invalid')}"


def _err(text: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": text}


TOO_BIG = _err("the body is over the server's --max-body-bytes")
INTERNAL = _err("a failure inside; its id is in the server's log")


def responses(*codes: int, **texts: str) -> dict[int | str, dict[str, Any]]:
    """The error answers of a route: `codes` with their usual meaning (or `texts["e400"]`)."""
    usual = {
        400: "malformed JSON, or a value outside a stated limit",
        404: "no such index (or pool, or retriever)",
        413: TOO_BIG["description"],
        422: "a field missing, of the wrong type, or unknown",
        503: "the models are not loaded, or the index is being written past the wait",
        504: "past the server's --time-budget (queue and model loading included)",
        500: INTERNAL["description"],
    }
    return {c: _err(texts.get(f"e{c}", usual[c])) for c in (*codes, 413, 500)}
