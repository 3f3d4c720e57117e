"""A JSON value written in pieces: `json.dump(value, out, ensure_ascii=False)`'s text, made by
json's C encoder.

`json.dump` writes in pieces (a 100,000-item result is never one string, docs/decisions.md
mem35d) but through json's pure-Python encoder: a generator step and a `write` per item,
thousands of instructions per item of a fan-out's result. Here a long list goes out in runs
of `PIECE` items, each encoded at once in C; the text is the same, piece for piece joined.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

PIECE = 1024  # items of a list encoded at once: small pieces, few calls

_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dump's defaults: ", " and ": "
_CONTAINERS = (list, tuple, dict)


def write_json(value: Any, out: TextIO, piece: int = PIECE) -> None:
    """Write `value` as `json.dump(value, out, ensure_ascii=False)` does (same text)."""
    out.writelines(_pieces(value, piece))


def _pieces(value: Any, piece: int) -> Iterator[str]:
    if isinstance(value, dict) and any(isinstance(v, _CONTAINERS) for v in value.values()):
        yield from _dict_pieces(value, piece)
    elif isinstance(value, list | tuple) and len(value) > piece:
        yield from _list_pieces(value, piece)
    else:
        yield _ENCODER.encode(value)


def _dict_pieces(value: dict[Any, Any], piece: int) -> Iterator[str]:
    """Key by key; a key is written as json writes it (a number or None turned into text)
    by encoding it in a one-key object."""
    yield "{"
    separator = ""
    for key, item in value.items():
        if isinstance(item, _CONTAINERS):
            yield separator + _ENCODER.encode({key: 0})[1:-2]  # `"key": `
            yield from _pieces(item, piece)
        else:
            yield separator + _ENCODER.encode({key: item})[1:-1]
        separator = ", "
    yield "}"


def _list_pieces(value: list[Any] | tuple[Any, ...], piece: int) -> Iterator[str]:
    """Runs of up to `piece` items encoded at once; an item that is itself a long list or a
    big object is written in pieces of its own."""
    yield "["
    separator = ""
    run: list[Any] = []
    for item in value:
        if isinstance(item, _CONTAINERS) and len(item) > piece:
            if run:
                yield separator + _ENCODER.encode(run)[1:-1]
                run, separator = [], ", "
            yield separator
            yield from _pieces(item, piece)
            separator = ", "
            continue
        run.append(item)
        if len(run) == piece:
            yield separator + _ENCODER.encode(run)[1:-1]
            run, separator = [], ", "
    if run:
        yield separator + _ENCODER.encode(run)[1:-1]
    yield "]"
