"""Transcript files: the plain-text format, JSON arrays and JSONL of `{role, content}`.

Plain text: a line starting with `User:` or `Assistant:` (any letter case; also
`System:`) opens a turn. The text after the colon (leading blanks dropped) is the
turn's first line and every following line belongs to it until the next marker.
Lines before the first marker are a preamble and are ignored. Blank lines that
end a turn are separators, not content. Markdown framing is not content either:
when the first non-blank line after an assistant turn's last footer line is a
heading (`# ...`), a code fence or a thematic break (`---`), the turn ends at the footer and the rest, up to
the next marker, is commentary (so the specs' own example files can be checked).
Writing a text transcript reproduces everything but the message contents as read.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from vpp.footer import looks_like_footer

Format = Literal["text", "json", "jsonl"]
CHECKED_ROLES = ("user", "assistant")
SKIPPED_ROLES = ("system", "developer", "tool")
# The speaker names people, APIs and chat exports use for each role (any letter case).
SPEAKERS: Mapping[str, str] = {
    **dict.fromkeys(("user", "human", "h", "you", "me", "q", "prompt"), "user"),
    **dict.fromkeys(
        (
            "assistant",
            "ai",
            "a",
            "model",
            "bot",
            "chatbot",
            "llm",
            "claude",
            "chatgpt",
            "gpt",
            "gemini",
            "bard",
            "copilot",
            "llama",
            "mistral",
            "response",
        ),
        "assistant",
    ),
    **dict.fromkeys(("system", "developer", "tool", "function", "ipython"), "system"),
}
# `Claude`, `GPT-4o`, `gpt 4` (not `User 10` of `User 10:42:`)
_NAME = r"[a-z]{3,}[-. ]?[0-9][\w.-]*(?!:\d)(?!\d)|[a-z]+"
# A time (and date) as chat logs stamp a turn: `10:42`, `10:42:07 PM`, `2024-05-01 10:42`,
# `5/1/24, 10:42`.
_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]?[ap]\.?m\.?)?"
_DATE = r"(?:\d{4}-\d{2}-\d{2}[ tT]|\d{1,2}/\d{1,2}/\d{2,4},?[ \t])"
_STAMP = rf"(?:{_DATE})?{_TIME}(?:[ \t]?(?:z|utc|[+-]\d{{2}}:?\d{{2}}))?"
# Before the name: `[10:42] `, `[2024-05-01 10:42:07] `, `10:42 - `; after it:
# ` (10:42)`, ` [10:42]`, ` · 10:42`, `, 10:42 PM`, ` - 10:42`.
_STAMP_BEFORE = rf"(?:\[{_STAMP}\][ \t]*(?:-[ \t]*)?|{_STAMP}[ \t]+-[ \t]+)"
_STAMP_AFTER = rf"(?:[ \t]*(?:\({_STAMP}\)|\[{_STAMP}\])|[ \t]*[·,-][ \t]*{_STAMP}|[ \t]+{_STAMP})"
# `User:`, and as chat exports write it: `**User:**`, `**User**:`, `## Assistant`,
# `ChatGPT said:`, with a timestamp before or after the name (chat logs).
_MARKER = re.compile(
    rf"^(?P<heading>#{{1,6}}[ \t]+)?(?P<before>{_STAMP_BEFORE})?(?P<bold>\*\*|__)?"
    rf"(?P<name>{_NAME})(?P<after>{_STAMP_AFTER})?(?P<said>[ \t]+said)?(?P<shut>(?P=bold))?"
    rf"(?P<late>{_STAMP_AFTER})?[ \t]*(?P<colon>:)?(?P<shut2>(?P=bold))?[ \t]*(?P<text>.*)$",
    re.IGNORECASE,
)
_JSON_INT_DIGITS = 4_000
# JSON as APIs and exports write it: the list under `messages` (OpenAI, Anthropic),
# `contents` (Gemini), `conversations` (ShareGPT) or `chat_messages` (Claude export); the
# speaker under `role`, `from`, `sender`, `author` or `speaker` (a name or `{"role": ...}`);
# the text under `content`, `text`, `value` or `parts` (Gemini's `[{"text": ...}]`).
LIST_KEYS = ("messages", "contents", "conversations", "chat_messages")
ROLE_KEYS = ("role", "from", "sender", "author", "speaker")
CONTENT_KEYS = ("content", "text", "value", "parts")
# After a footer: a heading, a code fence, or a thematic break (`---`, `***`, `___`) that
# chat exports put between turns.
_MARKDOWN_FRAME = re.compile(
    r"^(?:#{1,6}(?:\s|$)|```|~~~|(?:-[ \t]*){3,}$|(?:\*[ \t]*){3,}$|(?:_[ \t]*){3,}$)"
)


# The header snippet's first line (1.4: "Viable-Prompt Protocol:", 1.5: "Viable Prompt
# Protocol v1.5 ..."), as people paste it at the start of a conversation.
_HEADER = re.compile(r"viable[- ]prompt protocol|VPP_VERSION", re.IGNORECASE)


def is_setup(message: Message) -> bool:
    """A user turn that pastes the protocol's header snippet instead of giving a command:
    the conversation's setup, as a system prompt is where the app has none."""
    return (
        message.role == "user"
        and not message.content.lstrip().startswith("!<")
        and _HEADER.search(message.content) is not None
    )


class TranscriptError(ValueError):
    """The transcript cannot be read; `line` is 1-based."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Message:
    role: str
    content: str
    line: int  # where the content (text) or the message object (JSON) starts
    content_lines_map: bool  # whether content line k sits at file line `line + k - 1`
    # Plain text only, to write the file back as read: the marker as written up to the
    # content ("USER: "), or the whole marker line when the content starts below it;
    # and the lines after the content (separators, Markdown commentary).
    marker: str = ""
    inline: bool = True
    after: tuple[str, ...] = ()
    # JSON only: the message object as read and the key its text was read from, so the
    # message is written back as read (key order, role spelling, parts, other fields).
    record: Mapping[str, Any] = field(default_factory=dict)
    content_key: str = "content"

    def file_line(self, content_line: int) -> int:
        return self.line + content_line - 1 if self.content_lines_map else self.line


@dataclass(frozen=True)
class Transcript:
    format: Format
    messages: tuple[Message, ...]
    preamble: tuple[str, ...] = ()  # plain text: the lines before the first marker
    wrapper: Mapping[str, Any] | None = None  # the enclosing object of {"messages": [...]}
    list_key: str = "messages"  # the wrapper's key that holds the messages
    fence: tuple[str, str] | None = None  # JSON: the Markdown code fence lines around it
    # Copied from a web page's source (`&lt;q&gt;` for `<q>`): the contents as read.
    # Contents are held unescaped; written back, an unchanged one is written as read and a
    # repaired one escaped.
    escaped_contents: tuple[str, ...] | None = None
    # A ChatGPT export (`mapping` tree): the document as read, which conversation of it,
    # and the node id of each message, so repairs are written back into the tree.
    export: Any = None
    conversation: int | None = None
    nodes: tuple[str, ...] = ()
    in_list: bool = False  # JSON: the conversation object is the only item of a list

    @property
    def shows_start(self) -> bool:
        """Whether this is a whole conversation, not an excerpt: an export of one (ChatGPT's
        mapping tree from its root, Claude's `chat_messages`), or its setup is here — a
        system turn, or the VPP header snippet, before or in the first user turn."""
        if self.export is not None or (
            self.wrapper is not None and self.list_key == "chat_messages"
        ):
            return True
        for message in self.messages:
            if message.role in SKIPPED_ROLES:
                if message.role in ("system", "developer"):
                    return True
                continue
            return is_setup(message)
        return False

    def with_contents(self, contents: Sequence[str]) -> Transcript:
        messages = tuple(
            replace(m, content=c) for m, c in zip(self.messages, contents, strict=True)
        )
        return replace(self, messages=messages)


def read_transcript(text: str) -> Transcript:
    """Parse `text`, detecting its format from the first non-blank character."""
    unfenced, fence = _unfenced(text)
    stripped = unfenced.lstrip().removeprefix("\ufeff").lstrip()
    if not stripped:
        raise TranscriptError("the transcript is empty: no turns to check")
    if _marker(stripped.split("\n", 1)[0]) is not None:  # `[10:42] User:`: not JSON
        # Plain text keeps its fence lines as its own text (preamble, framing after a
        # reply), so that `vpp repair` writes them back.
        transcript, fence = _read_text(text), None
    elif stripped.startswith("["):
        transcript = _read_json(unfenced)
    elif stripped.startswith("{"):
        wrapped = _is_wrapped_messages(unfenced)
        transcript = _read_json(unfenced) if wrapped else _read_jsonl(unfenced)
    else:
        transcript, fence = _read_text(text), None
    if not any(m.role in ("user", "assistant") for m in transcript.messages):
        # An empty conversation is not evidence of compliance (same rule for every format).
        raise TranscriptError("no user or assistant messages found")
    if _is_html_escaped(transcript.messages):
        read = tuple(m.content for m in transcript.messages)
        transcript = replace(
            transcript.with_contents([html.unescape(content) for content in read]),
            escaped_contents=read,
        )
    return replace(transcript, fence=fence) if fence else transcript


# `&lt;q&gt;` / `!&lt;o_f&gt;`: a tag as a page's HTML source writes it.
_ESCAPED_TAG = re.compile(r"&lt;/?[a-z][a-z0-9_]*&gt;", re.IGNORECASE)


def _is_html_escaped(messages: Sequence[Message]) -> bool:
    """The transcript was copied from HTML source: its tags are written as entities and no
    `<` is written plainly (HTML source has none in text; a conversation about HTML that
    writes a tag plainly keeps its entities)."""
    contents = [m.content for m in messages if m.role in CHECKED_ROLES]
    return any(_ESCAPED_TAG.search(c) for c in contents) and not any("<" in c for c in contents)


_FENCE = re.compile(r"[ \t]*(?:`{3,}|~{3,})[\w.+-]*[ \t]*")


def _unfenced(text: str) -> tuple[str, tuple[str, str] | None]:
    """JSON wrapped in a Markdown code fence (a model's or a chat export's ```json):
    the text with the fence lines emptied (line numbers kept) and the fence lines."""
    lines = text.split("\n")
    filled = [n for n, line in enumerate(lines) if line.strip()]
    if len(filled) < 2:
        return text, None
    first, last = filled[0], filled[-1]
    opening, closing = lines[first].rstrip("\r"), lines[last].rstrip("\r")
    inner = next((lines[n] for n in filled[1:] if n != last), "").lstrip()
    if not (_FENCE.fullmatch(opening) and _FENCE.fullmatch(closing) and inner[:1] in ("[", "{")):
        return text, None
    lines[first] = lines[last] = ""
    return "\n".join(lines), (opening, closing)


def messages_from(turns: Sequence[Mapping[str, Any]]) -> Transcript:
    """A transcript from in-memory `{role, content}` mappings."""
    messages = [_message(turn, number, number, False) for number, turn in enumerate(turns, 1)]
    return Transcript("json", tuple(messages))


def write_transcript(transcript: Transcript, *, ascii_only: bool = False) -> str:
    """Serialize in the transcript's own format (JSON with `\\u` escapes if `ascii_only`)."""
    if transcript.escaped_contents is not None:
        escaped = [
            read if html.unescape(read) == message.content else html.escape(message.content, False)
            for read, message in zip(transcript.escaped_contents, transcript.messages, strict=True)
        ]
        transcript = replace(transcript.with_contents(escaped), escaped_contents=None)
    if transcript.export is not None:
        return _write_export(transcript, ascii_only)
    if transcript.format == "text":
        return _write_text(transcript)
    records = [_record(m) for m in transcript.messages]
    if transcript.format == "jsonl":
        written = "".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in records)
    else:
        document: Any = records
        if transcript.wrapper is not None:
            document = {**transcript.wrapper, transcript.list_key: records}
        if transcript.in_list:
            document = [document]
        written = json.dumps(document, ensure_ascii=ascii_only, indent=2) + "\n"
    if transcript.fence is None:
        return written
    opening, closing = transcript.fence
    return f"{opening}\n{written}{closing}\n"


def _read_text(text: str) -> Transcript:
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    starts = [(n, m) for n, line in enumerate(lines, 1) if (m := _marker(line))]
    # One exporter writes every marker alike, so once the first marker sets the style
    # (plain, bold or heading), a `**User:**` line in a plain transcript is content; and
    # a file names each side one way (`Human:` and `Assistant:`), so another name (`A:`,
    # `User:`) is content.
    style = _style(starts[0][1]) if starts else None
    starts = [(n, m) for n, m in starts if _style(m) == style]
    speakers = {role: _speaker(starts, role) for role in ("user", "assistant")}
    # `System:` turns are skipped; `Tool:` or `Function:` in a reply is the reply's text.
    starts = [(n, m) for n, m in starts if _name(m) in (*speakers.values(), "system")]
    if not starts:
        raise TranscriptError(
            "no turns found; start each turn with 'User:' or 'Assistant:' (also read:"
            " Human/H/You, AI/A/Model/Claude/ChatGPT, bold or heading markers, 'You said:')"
        )
    messages = []
    for position, (number, match) in enumerate(starts):
        end = starts[position + 1][0] if position + 1 < len(starts) else len(lines) + 1
        role, inline = _role(match), bool(match.group("text").strip())
        if inline:
            marker, first = lines[number - 1][: match.start("text")], number
            content_lines = [match.group("text"), *lines[number : end - 1]]
        else:  # content begins on the first non-blank line after the marker
            skip = number
            while skip < end - 1 and not lines[skip].strip():
                skip += 1
            empty = skip == end - 1
            if empty:  # its (empty) content is the next line; it is found at its marker
                skip = number
            marker, first = "\n".join(lines[number - 1 : skip]), number if empty else skip + 1
            content_lines = lines[skip : end - 1]
        cut = _content_end(content_lines, role)
        messages.append(
            Message(
                role,
                "\n".join(content_lines[:cut]),
                first,
                True,
                marker,
                inline,
                tuple(content_lines[cut:]),
            )
        )
    return Transcript("text", tuple(messages), preamble=tuple(lines[: starts[0][0] - 1]))


def _marker(line: str) -> re.Match[str] | None:
    """The turn marker that opens ``line``, if any: a role and a colon (the Markdown
    marks balanced), or a heading or bold role alone on its line."""
    match = _MARKER.match(line)
    if match is None or _known_name(match.group("name")) is None:
        return None
    heading, bold, closed_before, colon, closed_after, text = match.group(
        "heading", "bold", "shut", "colon", "shut2", "text"
    )
    stamped = any(match.group("before", "after", "late"))
    if bold and bool(closed_before) == bool(closed_after):
        return None  # `**User**:**` or an unclosed `**User:`
    if colon:
        return match
    return match if (heading or bold or stamped) and not text else None


def _known_name(name: str) -> str | None:
    name = " ".join(name.lower().split())
    return SPEAKERS.get(name) or SPEAKERS.get(re.split(r"[-. 0-9]", name, maxsplit=1)[0])


def _style(marker: re.Match[str]) -> tuple[bool, bool, bool]:
    return bool(marker.group("heading")), bool(marker.group("bold")), bool(marker.group("said"))


def _name(marker: re.Match[str]) -> str:
    return " ".join(marker.group("name").lower().split())


def _role(marker: re.Match[str]) -> str:
    """`user`, `assistant` or `system`; `gpt-4o` is read by its family name `gpt`."""
    return _known_name(marker.group("name")) or "system"


def _speaker(starts: list[tuple[int, re.Match[str]]], role: str) -> str | None:
    """The name the file gives `role`: its first word name (`Assistant`), or its first
    letter name (`A`) when it has none, so that a `Q:`/`A:` list in a message stays text."""
    names = [_name(m) for _, m in starts if _role(m) == role]
    return next((name for name in names if len(name) > 1), names[0] if names else None)


def _content_end(lines: list[str], role: str) -> int:
    """How many of a turn's lines are content: not trailing blanks or Markdown framing."""
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    footers = [n for n in range(end) if looks_like_footer(lines[n])] if role == "assistant" else []
    if footers:
        after = [n for n in range(footers[-1] + 1, end) if lines[n].strip()]
        if after and _MARKDOWN_FRAME.match(lines[after[0]]):
            opening = next((text for text in lines if text.strip()), "")
            if _FENCE.fullmatch(opening) and _FENCE.fullmatch(lines[after[0]]):
                return after[0] + 1  # the fence closing a fenced reply is the reply's
            return footers[-1] + 1
    return end


def _write_text(transcript: Transcript) -> str:
    out = list(transcript.preamble)
    for message in transcript.messages:
        content = message.content.split("\n")
        if message.inline:
            marker = message.marker or f"{message.role.capitalize()}: "
            out += [marker + content[0], *content[1:]]
        else:
            out += [message.marker, *(content if message.content else [])]
        out += message.after
    return "\n".join(out)


def _is_wrapped_messages(text: str) -> bool:
    """`{"messages": [...], ...}` rather than JSONL (which may be a single object)."""
    try:
        document = json.loads(text, parse_int=_bounded_int)
    except (json.JSONDecodeError, RecursionError, TranscriptError):
        return False
    # A whole object that is not one message is a wrapper, whether it lists messages or
    # not: _read_json then says what it lacks (a JSONL line holds a role).
    return isinstance(document, dict) and (
        any(key in document for key in LIST_KEYS) or not any(key in document for key in ROLE_KEYS)
    )


def _bounded_int(digits: str) -> int:
    """JSON integers up to 4,000 digits (int() refuses more than 4,300, slowly)."""
    if len(digits.lstrip("-")) > _JSON_INT_DIGITS:
        raise TranscriptError(
            f"invalid JSON: a number with {len(digits):,} digits (at most {_JSON_INT_DIGITS:,})"
        )
    return int(digits)


def _load_json(text: str) -> Any:
    try:
        return json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as error:
        raise TranscriptError(
            f"invalid JSON: {error.msg} (column {error.colno})", error.lineno
        ) from None
    except RecursionError:
        raise TranscriptError("invalid JSON: nested too deeply") from None


def _read_json(text: str) -> Transcript:
    document = _load_json(text)
    if _is_chatgpt_export(document):
        return _read_export(text, document)
    wrapper = None
    array_start = text.find("[")
    list_key = "messages"
    in_list = _is_conversation_list(document)
    if in_list:  # a dataset of conversations (ShareGPT's `[{"conversations": [...]}]`)
        if len(document) != 1:
            raise TranscriptError(
                f"a list of {len(document)} conversations; vpp checks one conversation: save"
                " one of them as its own file, e.g. jq '.[0]' FILE > conversation.json"
            )
        document = document[0]
    if isinstance(document, dict):
        list_key = next((k for k in LIST_KEYS if isinstance(document.get(k), list)), "")
        found = re.search(rf'(?<!\\)"{list_key}"\s*:\s*\[', text) if list_key else None
        if found is None:
            raise TranscriptError('a JSON object transcript needs a "messages" list')
        wrapper = {k: v for k, v in document.items() if k != list_key}
        array_start = found.end() - 1
        document = document[list_key]
    if not isinstance(document, list):
        raise TranscriptError("a JSON transcript must be a list of {role, content} messages")
    lines = _item_lines(text, array_start, len(document))
    messages = [
        _message(item, n, line, False) for n, (item, line) in enumerate(zip(document, lines), 1)
    ]
    return Transcript("json", tuple(messages), wrapper=wrapper, list_key=list_key, in_list=in_list)


def _is_conversation_list(document: Any) -> bool:
    """A list of objects that each hold a conversation's messages under a list key."""
    return (
        isinstance(document, list)
        and bool(document)
        and all(
            isinstance(item, Mapping)
            and not any(key in item for key in ROLE_KEYS)
            and any(isinstance(item.get(key), list) for key in LIST_KEYS)
            for item in document
        )
    )


def _is_chatgpt_export(document: Any) -> bool:
    """ChatGPT's data export (`conversations.json`): conversations holding a `mapping`
    of message nodes, as a list or one conversation alone."""
    items = document if isinstance(document, list) else [document]
    return bool(items) and all(
        isinstance(item, Mapping) and isinstance(item.get("mapping"), Mapping) for item in items
    )


# Assistant content types that hold no reply text (reasoning, browsing, tool output).
_HIDDEN_CONTENT = frozenset(
    (
        "thoughts",
        "reasoning_recap",
        "tether_browsing_display",
        "tether_quote",
        "execution_output",
        "system_error",
        "user_editable_context",
        "model_editable_context",
    )
)


def _read_export(text: str, document: Any) -> Transcript:
    """The conversation of a ChatGPT export as the app shows it: the branch from the
    root to `current_node` (edits and regenerations on other branches left out)."""
    conversations = document if isinstance(document, list) else [document]
    if len(conversations) != 1:
        titles = ", ".join(
            f"[{n}] {str(c.get('title') or 'untitled')[:40]!r}"
            for n, c in enumerate(conversations[:5])
        )
        more = f" and {len(conversations) - 5} more" if len(conversations) > 5 else ""
        raise TranscriptError(
            f"a ChatGPT export with {len(conversations)} conversations ({titles}{more}); "
            "vpp checks one conversation: save one of them as its own file, e.g. "
            "jq '.[0]' conversations.json > conversation.json"
        )
    conversation = conversations[0]
    mapping: Mapping[str, Any] = conversation["mapping"]
    path = _branch(mapping, conversation.get("current_node"))
    messages: list[Message] = []
    nodes: list[str] = []
    for node_id in path:
        item = mapping[node_id].get("message")
        if not isinstance(item, Mapping):
            continue  # the root: no message
        line = _key_line(text, node_id)
        message = _message(item, len(messages) + 1, line, False)
        if message.role in CHECKED_ROLES and _is_hidden_node(item):
            message = replace(message, role="tool", content="")
        messages.append(message)
        nodes.append(node_id)
    return Transcript(
        "json",
        tuple(messages),
        export=document,
        conversation=0 if isinstance(document, list) else None,
        nodes=tuple(nodes),
    )


def _branch(mapping: Mapping[str, Any], current: Any) -> list[str]:
    """Node ids from the root to `current` (or, without one, to the last leaf)."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [
            key
            for key, node in mapping.items()
            if isinstance(node, Mapping) and not node.get("children")
        ]
        if not leaves:
            raise TranscriptError("a ChatGPT export's mapping has no last message")
        current = leaves[-1]
    path: list[str] = []
    node_id: Any = current
    while isinstance(node_id, str) and node_id not in path:
        node = mapping.get(node_id)
        if not isinstance(node, Mapping):
            raise TranscriptError(f"a ChatGPT export names node {node_id!r}, which it lacks")
        path.append(node_id)
        node_id = node.get("parent")
    return path[::-1]


def _is_hidden_node(item: Mapping[str, Any]) -> bool:
    """A node the app does not show as a turn: hidden context, reasoning, tool calls."""
    metadata = item.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("is_visually_hidden_from_conversation"):
        return True
    recipient = item.get("recipient")
    if isinstance(recipient, str) and recipient != "all":
        return True  # a call to a tool (browser, python, ...)
    content = item.get("content")
    return isinstance(content, Mapping) and content.get("content_type") in _HIDDEN_CONTENT


def _key_line(text: str, key: str) -> int:
    """The line where the JSON key `key` first appears (a node of the mapping)."""
    found = re.search(rf'"{re.escape(key)}"\s*:', text)
    return text.count("\n", 0, found.start()) + 1 if found else 1


def _write_export(transcript: Transcript, ascii_only: bool) -> str:
    """The export as read, each message node holding its (repaired) message."""
    document = json.loads(json.dumps(transcript.export))  # a copy to change
    conversation = document[0] if transcript.conversation is not None else document
    for message, node_id in zip(transcript.messages, transcript.nodes, strict=True):
        if message.role in CHECKED_ROLES:
            conversation["mapping"][node_id]["message"] = _record(message)
    written = json.dumps(document, ensure_ascii=ascii_only, indent=2) + "\n"
    if transcript.fence is None:
        return written
    opening, closing = transcript.fence
    return f"{opening}\n{written}{closing}\n"


def _item_lines(text: str, array_start: int, count: int) -> list[int]:
    """Line numbers where each element of the JSON array at `array_start` begins."""
    decoder = json.JSONDecoder()
    position, starts = array_start + 1, []
    line, counted_to = 1 + text.count("\n", 0, position), position
    for _ in range(count):
        while text[position] in " \t\r\n,":
            position += 1
        line += text.count("\n", counted_to, position)
        counted_to = position
        starts.append(line)
        _, position = decoder.raw_decode(text, position)
    return starts


def _read_jsonl(text: str) -> Transcript:
    messages: list[Message] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line, parse_int=_bounded_int)
        except TranscriptError as error:
            raise TranscriptError(error.message, number) from None
        except json.JSONDecodeError as error:
            raise TranscriptError(
                f"invalid JSON line: {error.msg} (column {error.colno})", number
            ) from None
        except RecursionError:
            raise TranscriptError("invalid JSON line: nested too deeply", number) from None
        messages.append(_message(item, len(messages) + 1, number, False))
    return Transcript("jsonl", tuple(messages))


def _message(item: Any, index: int, line: int, maps: bool) -> Message:
    if not isinstance(item, Mapping):
        raise TranscriptError(f"message {index} must be an object with role and content", line)
    role = _json_role(item, index, line)
    content_key = next((key for key in CONTENT_KEYS if key in item), "content")
    written = item.get(content_key)
    if role in CHECKED_ROLES and _is_tool_step(item, written):
        role = "tool"  # a tool call or its result: no protocol text, like a `tool` turn
    if role not in CHECKED_ROLES:
        return Message(role, "", line, maps, record=item, content_key=content_key)
    content = _text_of(written)
    if content is None:
        raise TranscriptError(
            f"message {index} {content_key} must be a string or a list of text parts", line
        )
    return Message(role, content, line, maps, record=item, content_key=content_key)


def _json_role(item: Mapping[str, Any], index: int, line: int) -> str:
    """The role of a JSON message, whatever key and speaker name its writer used."""
    key = next((key for key in ROLE_KEYS if key in item), None)
    written = item.get(key) if key else item.get("type")  # LangChain: {"type": "human"}
    if isinstance(written, Mapping):  # ChatGPT export: "author": {"role": "user"}
        written = written.get("role")
    if not isinstance(written, str):
        written = None
    role = _known_name(written) if written is not None else None
    if written is None or role is None or (key is None and role == "system" != written):
        shown = f"{key} {written!r}" if key else "no role"
        raise TranscriptError(
            f"message {index} has {shown}; expected user or assistant"
            " (also read: human, you; ai, model, gpt, bot; system, tool)",
            line,
        )
    name = written.lower()
    return name if role == "system" and name in SKIPPED_ROLES else role


_TOOL_PARTS = frozenset(
    ("tool_use", "tool_result", "tool_call", "function_call", "functionCall", "functionResponse")
)


def _is_tool_step(item: Mapping[str, Any], content: Any) -> bool:
    """An assistant's tool call (OpenAI: no content, `tool_calls`) or a tool result sent
    back as a user message (Anthropic `tool_result`, Gemini `functionResponse` parts)."""
    if content is None:
        return "tool_calls" in item or "function_call" in item
    if not isinstance(content, list) or not content:
        return False
    kinds = {
        kind
        for part in content
        if isinstance(part, Mapping)
        for kind in (part.get("type"), *part.keys())
        if isinstance(kind, str)
    }
    has_text = any(isinstance(p, str) or _is_text_part(p) for p in content)
    return not has_text and bool(kinds & _TOOL_PARTS)


def _text_of(content: Any) -> str | None:
    """The text of a message's content as chat APIs write it: a string; a list of parts
    (strings and `{"type": "text", "text": ...}` or Gemini's `{"text": ...}`), joined as
    they are (pieces of one message), other parts (images, tool calls) carrying no
    protocol text; or ChatGPT's `{"parts": [...]}`. None when it holds no such text."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        inner = content.get("parts", content.get("text"))
        return None if isinstance(inner, Mapping) else _text_of(inner)
    if not isinstance(content, list):
        return None
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif _is_text_part(part):
            text = part.get("text")
            if not isinstance(text, str):
                return None
            texts.append(text)
    return "".join(texts)


def _is_text_part(part: Any) -> bool:
    return (
        isinstance(part, Mapping)
        and part.get("type", "text") == "text"
        and ("type" in part or "text" in part)
    )


def _with_text(content: Any, text: str) -> Any:
    """`content` in its own shape holding `text` instead (a repaired reply)."""
    if _text_of(content) == text:
        return content
    if isinstance(content, Mapping):
        inner = "parts" if "parts" in content else "text"
        return {**content, inner: _with_text(content.get(inner), text)}
    if isinstance(content, list):
        # One text part with the new text, then the parts that hold no text.
        others = [p for p in content if not isinstance(p, str) and not _is_text_part(p)]
        typed = any(isinstance(p, Mapping) and "type" in p for p in content)
        first = {"type": "text", "text": text} if typed or not content else {"text": text}
        if content and all(isinstance(p, str) for p in content):
            return [text]
        return [first, *others]
    return text


def _record(message: Message) -> dict[str, Any]:
    if not message.record:
        return {"role": message.role, "content": message.content}
    record = dict(message.record)
    if message.role in CHECKED_ROLES:
        # A Claude export holds the text twice (`text` and `content` parts): change both.
        read = _text_of(record.get(message.content_key))
        for key in CONTENT_KEYS:
            if key in record and (key == message.content_key or _text_of(record[key]) == read):
                record[key] = _with_text(record[key], message.content)
    return record
