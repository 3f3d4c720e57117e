"""The fetch tool's transport: one GET, size- and time-capped, HTML turned into text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = ["FetchError", "Fetched", "fetch", "html_to_text"]

SKIPPED_TAGS = {"script", "style", "noscript", "template", "svg", "head"}
BLOCK_TAGS = {
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
    "footer", "nav", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "hr", "title",
}  # fmt: skip


class FetchError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Fetched:
    status: int
    content_type: str
    text: str
    omitted_bytes: int  # body beyond the cap, not downloaded


async def fetch(url: str, *, max_bytes: int, timeout: float) -> Fetched:
    if not re.match(r"^https?://", url, re.IGNORECASE):
        raise FetchError(f"only http:// and https:// URLs can be fetched, not {url!r}")
    import aiohttp

    client_timeout = aiohttp.ClientTimeout(total=timeout)
    try:
        async with (
            aiohttp.ClientSession(timeout=client_timeout) as session,
            session.get(url, allow_redirects=True, max_redirects=5) as response,
        ):
            body = bytearray()
            omitted = 0
            async for chunk in response.content.iter_chunked(65536):
                room = max_bytes - len(body)
                body += chunk[:room]
                if len(chunk) > room:
                    omitted += len(chunk) - room
                    break  # stop downloading: the rest is not wanted
            content_type = response.headers.get("Content-Type", "")
            charset = response.charset or "utf-8"
            status = response.status
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise FetchError(f"GET {url} failed: {exc or type(exc).__name__}") from None
    try:
        text = bytes(body).decode(charset, errors="replace")
    except LookupError:
        text = bytes(body).decode("utf-8", errors="replace")
    if "html" in content_type.lower():
        text = html_to_text(text)
    return Fetched(status, content_type, text, omitted)


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_TAGS:
            self._skipping += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag in BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
