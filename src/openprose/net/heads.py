"""A request head as the bytes sent, with every header checked first: shared by the pool
and the blocking client, so both refuse the same headers in the same words."""

from __future__ import annotations

TYPE_CHECKING = False  # the trace export helper starts without `typing`
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["encode_head"]


def encode_head(own_lines: Iterable[str], fields: Mapping[str, str]) -> bytes:
    """`own_lines` (the request line, `host`: ours, not checked) then `fields`, each line
    ending in CRLF, without the blank line that ends the head. ValueError for a header name or
    value that would break the head (a line break, a NUL, a colon or space in a name) or
    that is not Latin-1."""
    lines = list(own_lines)
    for name, value in fields.items():
        if not name or any(c in name for c in " :\r\n\t") or any(c in value for c in "\r\n\0"):
            raise ValueError(f"the header {name!r} holds a character HTTP forbids there")
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("a request header holds a character outside Latin-1") from None
