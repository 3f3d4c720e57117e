"""OTLP/protobuf encoding of finished spans, written by hand for the spans we make.

The export helper (`openprose.telemetry.export`) turns span records into the body of an OTLP
`ExportTraceServiceRequest`. The SDK's encoder builds a protobuf object per span, per
attribute and per value before serialising (~26 µs a span here: as much CPU as the VM spends
on a session); this one writes the wire format directly and reuses the bytes of attributes
it has seen (a fan-out repeats the model, provider, file, line... in every span), ~5x less.
Its output is byte-for-byte the SDK's (`encode_spans(...).SerializePartialToString()`):
tests/openprose/telemetry/test_otlp.py checks that on generated spans.

A record is what the run's process sends for a span (see `openprose.telemetry.otel`):
`(name, trace id hex, span id, parent span id or None, SpanKind value, StatusCode value,
status description or None, start ns, end ns, attributes)`. The two spans every session
makes — its statement's and its model call's — travel as flat tuples of the values their
attributes are made of instead (`STATEMENT`, `CALL`: no dict is built in the run's
process); `expand` turns them into records, and the encoder writes them with the
attributes they share with the spans before them as cached blocks (a fan-out's calls
differ in their step, ids, times and token counts only). Records travel to the helper
in frames (`frame`): a 4-byte length, then a `marshal`led list of records — the cheapest
serialisation there is on the run's side (~0.3 µs a span, against ~2 µs for JSON lines), and
both ends are the same interpreter (the helper is `sys.executable`).
"""

from __future__ import annotations

import marshal
import struct
from collections.abc import Iterable, Mapping, Sequence

TYPE_CHECKING = False  # the export helper starts without `typing`
if TYPE_CHECKING:
    from typing import Any

Record = tuple[str, str, int, "int | None", int, int, "str | None", int, int, "Mapping[str, Any]"]
# A span link: (trace id hex, span id) of a span of another process (a resumed run's earlier
# attempt). A record with links has them as an eleventh item.
Link = tuple[str, int]
LinkedRecord = tuple[
    str, str, int, "int | None", int, int, "str | None", int, int, "Mapping[str, Any]",
    "tuple[Link, ...]",
]  # fmt: skip

_INT64 = 1 << 63
_ERROR = 2  # StatusCode.ERROR: the only status whose description is kept
_CACHE_LIMIT = 8192  # attribute encodings kept; cleared when full
_pack_u64 = struct.Struct("<Q").pack
_pack_double = struct.Struct("<d").pack
_SMALL = [bytes((n,)) for n in range(128)]
_lengths = dict(enumerate(_SMALL))  # varints of the spans' lengths, as they are met
_KINDS = [b"\x30" + bytes((value + 1,)) for value in range(5)]  # SpanKind -> SPAN_KIND_*
# A span id (field 2) and its times (fields 7 and 8, fixed64) in one `pack` each.
_pack_id = struct.Struct(">HQ").pack  # 0x1208: field 2 (span id), 0x2208: field 4 (parent)
_pack_times = struct.Struct("<BQBQ").pack  # 0x39, start, 0x41, end
_SUCCEEDED = b"\x7a\x00\x85\x01\x00\x01\x00\x00"  # an UNSET status, then the flags


SCOPE_NAME = "openprose"  # the instrumentation scope, and the default service name
FRAME_HEADER = struct.Struct("<I")
INTERNAL, CLIENT = 0, 2  # SpanKind values
UNSET = 0  # StatusCode value

# A statement's span: (STATEMENT, trace id hex, span id, parent span id or None, status
# code, status description, start ns, end ns, statement kind, step, file, line, error type,
# agent name or None, conversation id (the run's id) or None). A session of an agent is
# the GenAI `invoke_agent` span of that agent, in the run's conversation.
STATEMENT = 1
# A model call's span (GenAI client): (CALL, trace id hex, span id, parent span id or None,
# status code, status description, start ns, end ns, step, request model, max tokens,
# temperature, alias, provider, call kind, attempt, finish reason (None: no answer), input
# tokens, output tokens, response model, response id, error type, with content capture the
# system instructions, input messages, output messages as JSON text, else None, then the
# prompt tokens read from and written to the provider's prompt cache, the conversation id
# (the run's id) or None, and the server's address and port, or None and None).
CALL = 2


def expand(record: Any) -> Record:
    """Any record as a full one (name, ids, kind, status, times, attributes)."""
    shape = record[0]
    if shape == STATEMENT:
        (_, trace, span, parent, code, why, start, end, kind, step, path, line, error, agent,
         conversation) = record  # fmt: skip
        attributes: dict[str, Any] = {"prose.step": step, **dict(_code_attributes(path, line))}
        if agent is not None:
            attributes.update(_agent_attributes(agent, conversation))
            kind = f"invoke_agent {agent}" if agent else "invoke_agent"
        if error:
            attributes["error.type"] = error
        return (kind, trace, span, parent, INTERNAL, code, why, start, end, attributes)
    if shape == CALL:
        (_, trace, span, parent, code, why, start, end, step, model, max_tokens, temperature,
         alias, provider, kind, attempt, finish, tokens_in, tokens_out, answered_by, answer_id,
         error, system, asked, answer, cache_read, cache_write, conversation, address,
         port) = record  # fmt: skip
        attributes = {
            **dict(_model_attributes(provider, model, max_tokens, conversation, address, port)),
            "prose.step": step,
            "prose.model.alias": alias,
            "prose.call.kind": kind,
            "prose.call.attempt": attempt,
        }
        if temperature is not None:
            attributes["gen_ai.request.temperature"] = temperature
        if system is not None:
            attributes["gen_ai.system_instructions"] = system
        if asked is not None:
            attributes["gen_ai.input.messages"] = asked
        if finish is not None:
            attributes["gen_ai.response.finish_reasons"] = (finish,)
            attributes["gen_ai.usage.input_tokens"] = tokens_in
            attributes["gen_ai.usage.output_tokens"] = tokens_out
            if cache_read:
                attributes["gen_ai.usage.cache_read.input_tokens"] = cache_read
            if cache_write:
                attributes["gen_ai.usage.cache_creation.input_tokens"] = cache_write
            if answered_by:
                attributes["gen_ai.response.model"] = answered_by
            if answer_id:
                attributes["gen_ai.response.id"] = answer_id
            if answer is not None:
                attributes["gen_ai.output.messages"] = answer
        if error:
            attributes["error.type"] = error
        return (f"chat {model}", trace, span, parent, CLIENT, code, why, start, end, attributes)
    return record  # type: ignore[no-any-return]


def frame(records: list[Any]) -> bytes:
    """Records as one frame of the helper's input."""
    try:
        data = marshal.dumps(records)
    except ValueError:  # an attribute value of a class of its own: sent as its text
        data = marshal.dumps([_plain_record(record) for record in records])
    return FRAME_HEADER.pack(len(data)) + data


def _plain_record(record: tuple[Any, ...]) -> tuple[Any, ...]:
    if record[0].__class__ is str:  # a full record: its attributes tenth, its links after
        return (*record[:9], _plain(record[9]), *record[10:])
    return tuple(_plain({"": value})[""] for value in record)


def _plain(attributes: Mapping[str, Any]) -> dict[str, Any]:
    plain = {}
    for key, value in attributes.items():
        try:
            marshal.dumps(value)
        except ValueError:
            value = str(value)
        plain[key] = value
    return plain


def varint(value: int) -> bytes:
    if value < 128:
        return _SMALL[value]
    out = bytearray()
    while value > 127:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    return tag + varint(len(payload)) + payload


def _text(tag: bytes, value: str) -> bytes:
    return _field(tag, value.encode("utf-8", "surrogatepass"))


def any_value(value: Any) -> bytes:
    """An `AnyValue` message, as the SDK encodes an attribute value (ValueError or
    TypeError where the SDK gives up on the attribute)."""
    if value is None:
        return b""
    if value is True:
        return b"\x10\x01"
    if value is False:
        return b"\x10\x00"
    if isinstance(value, str):
        return _text(b"\x0a", value)
    if isinstance(value, int):
        if not -_INT64 <= value < _INT64:
            raise ValueError(f"{value} is out of the int64 range")
        return b"\x18" + varint(value & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        return b"\x21" + _pack_double(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join([_field(b"\x0a", any_value(item)) for item in value]))
    if isinstance(value, Mapping):
        return _field(
            b"\x32",
            b"".join([_field(b"\x0a", key_value(str(k), v)) for k, v in value.items()]),
        )
    raise TypeError(f"cannot encode a {type(value).__name__} attribute")


def key_value(key: str, value: Any) -> bytes:
    """A `KeyValue` message."""
    return (_text(b"\x0a", key) if key else b"") + _field(b"\x12", any_value(value))


def attributes(tag: bytes, values: Mapping[str, Any] | None) -> bytes:
    """Repeated `KeyValue` fields under `tag`; an attribute the SDK would drop is dropped."""
    out = []
    for key, value in (values or {}).items():
        try:
            out.append(_field(tag, key_value(key, value)))
        except (TypeError, ValueError):
            continue
    return b"".join(out)


def _attribute(key: str, value: Any) -> bytes:
    """A span's attribute field; nothing for a value the SDK would drop."""
    try:
        return _field(b"\x4a", key_value(key, value))
    except (TypeError, ValueError):
        return b""


class SpanEncoder:
    """Encodes batches of span records that share one resource and instrumentation scope
    (those of the process exporting them)."""

    def __init__(
        self,
        resource_attributes: Mapping[str, Any],
        scope_name: str,
        scope_version: str | None = None,
        resource_schema_url: str = "",
        scope_schema_url: str = "",
    ) -> None:
        resource = _field(b"\x0a", attributes(b"\x0a", resource_attributes))
        scope = _text(b"\x0a", scope_name) if scope_name else b""
        if scope_version:
            scope += _text(b"\x12", scope_version)
        self._resource = resource
        self._resource_schema = _text(b"\x1a", resource_schema_url) if resource_schema_url else b""
        self._scope = _field(b"\x0a", scope)
        self._scope_schema = _text(b"\x1a", scope_schema_url) if scope_schema_url else b""
        self._attributes: dict[tuple[str, Any, type], bytes] = {}
        self._names: dict[str, bytes] = {}
        self._blocks: dict[tuple[Any, ...], bytes] = {}  # runs of attributes spans share
        self._traces: dict[str, bytes] = {}
        # The parts a fan-out's statement and call spans share, by what they are made of.
        self._statements: dict[tuple[Any, ...], tuple[bytes, ...]] = {}
        self._calls: dict[tuple[Any, ...], tuple[bytes, ...]] = {}

    def request(self, records: Iterable[Record]) -> bytes:
        """The serialized `ExportTraceServiceRequest` of these spans, in order."""
        return self.request_of(self.spans(records))

    def spans(self, records: Iterable[Record]) -> list[bytes]:
        """Each record as its `spans` field of a `ScopeSpans` (see `request_of`)."""
        fields = []
        any_span = self.any_span
        for record in records:
            span = any_span(record)
            size = len(span)
            length = _lengths.get(size)
            if length is None:
                length = varint(size)
                if size < 1 << 14:  # the two-byte ones: a bounded table
                    _lengths[size] = length
            fields.append(b"".join((b"\x12", length, span)))
        return fields

    def request_of(self, spans: list[bytes]) -> bytes:
        """The serialized `ExportTraceServiceRequest` of spans encoded by `spans`."""
        scope_spans = _field(b"\x12", self._scope + b"".join(spans) + self._scope_schema)
        return _field(b"\x0a", self._resource + scope_spans + self._resource_schema)

    def any_span(self, record: Any) -> bytes:
        """One `Span` message of a record of any shape: as `span(expand(record))`."""
        shape = record[0]
        if shape == STATEMENT:
            return self._statement(record)
        if shape == CALL:
            return self._call(record)
        return self.span(record)

    def _head(
        self, name: str, trace_id: str, span_id: int, parent: int | None, kind: int
    ) -> list[bytes]:
        """A span's fields before its times: ids, name, kind."""
        trace = self._traces.get(trace_id)
        if trace is None:
            trace = self._traces[trace_id] = b"\x0a\x10" + bytes.fromhex(trace_id)
        parts = [trace, b"\x12\x08", span_id.to_bytes(8, "big")]
        if parent is not None:
            parts.append(b"\x22\x08")
            parts.append(parent.to_bytes(8, "big"))
        encoded_name = self._names.get(name)
        if encoded_name is None:
            if len(self._names) >= _CACHE_LIMIT:
                self._names.clear()
            encoded_name = self._names[name] = _text(b"\x2a", name) if name else b""
        parts.append(encoded_name)
        parts.append(_KINDS[kind])
        return parts

    def _block(self, key: tuple[Any, ...]) -> bytes:
        """The encoded run of attributes `key` stands for (see `_block_attributes`)."""
        cache = self._blocks
        encoded = cache.get(key)
        if encoded is None:
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            encoded = cache[key] = b"".join([_attribute(k, v) for k, v in _block_attributes(key)])
        return encoded

    def _statement(self, record: Any) -> bytes:
        (_, trace, span_id, parent, code, why, start, end, kind, step, path, line, error, agent,
         conversation) = record  # fmt: skip
        key = (trace, kind, path, line, line.__class__, agent, conversation)
        known = self._statements.get(key)
        if known is None:
            if len(self._statements) >= _CACHE_LIMIT:
                self._statements.clear()
            block = self._block(("code", path, line, line.__class__))
            if agent is not None:
                kind = f"invoke_agent {agent}" if agent else "invoke_agent"
                block += self._block(("agent", agent, conversation))
            head = self._head(kind, trace, 0, None, INTERNAL)
            known = self._statements[key] = (head[0], b"".join(head[3:]), block)
        parts = _opening(known[0], span_id, parent, known[1], start, end)
        parts.append(_text_attribute(_STEP, step))
        parts.append(known[2])
        return _ending(parts, error, code, why)

    def _call(self, record: Any) -> bytes:
        (_, trace, span_id, parent, code, why, start, end, step, model, max_tokens, temperature,
         alias, provider, kind, attempt, finish, tokens_in, tokens_out, answered_by, answer_id,
         error, system, asked, answer, cache_read, cache_write, conversation, address,
         port) = record  # fmt: skip
        # What a fan-out's calls share: the trace id, the name, the attributes before and
        # after the step (with their classes: True, 1 and 1.0 encode differently).
        key = (trace, model, provider, max_tokens, max_tokens.__class__, alias, kind, attempt,
               attempt.__class__, temperature, temperature.__class__, conversation, address,
               port, port.__class__)  # fmt: skip
        known = self._calls.get(key)
        if known is None:
            if len(self._calls) >= _CACHE_LIMIT:
                self._calls.clear()
            head = self._head(f"chat {model}", trace, 0, None, CLIENT)
            model_key = ("model", provider, model, max_tokens, max_tokens.__class__, *key[11:])
            known = self._calls[key] = (
                head[0],
                b"".join(head[3:]),
                self._block(model_key),
                self._block(("asked", *key[5:11])),
            )
        parts = _opening(known[0], span_id, parent, known[1], start, end)
        parts.append(known[2])
        parts.append(_text_attribute(_STEP, step))
        parts.append(known[3])
        if system is not None:
            parts.append(_attribute("gen_ai.system_instructions", system))
        if asked is not None:
            parts.append(_attribute("gen_ai.input.messages", asked))
        if finish is not None:
            answered = ("answered", finish, tokens_in, tokens_in.__class__, tokens_out,
                        tokens_out.__class__, answered_by, cache_read, cache_read.__class__,
                        cache_write, cache_write.__class__)  # fmt: skip
            parts.append(self._block(answered))
            if answer_id:
                parts.append(_text_attribute(_RESPONSE_ID, answer_id))
            if answer is not None:
                parts.append(_attribute("gen_ai.output.messages", answer))
        return _ending(parts, error, code, why)

    def span(self, record: Record | LinkedRecord) -> bytes:
        """One `Span` message (field order and defaults as the SDK writes them)."""
        name, trace_id, span_id, parent, kind, code, why, start, end, values = record[:10]
        parts = self._head(name, trace_id, span_id, parent, kind)
        _times(parts, start, end)
        cache = self._attributes
        for key, value in values.items():
            known = (key, value, value.__class__)  # the class: True == 1 == 1.0
            try:
                encoded = cache[known]
            except KeyError:
                encoded = _attribute(key, value)
                if len(cache) >= _CACHE_LIMIT:
                    cache.clear()
                cache[known] = encoded
            except TypeError:  # a list or a mapping: not hashable, not cached
                encoded = _attribute(key, value)
            parts.append(encoded)
        for links in record[10:]:  # a record with links has them last
            parts.extend(_link(link) for link in links)
        _status(parts, code, why)
        return b"".join(parts)


def _link(link: Link) -> bytes:
    """A `Span.Link` (field 13) to a span of another process: its ids and its flags
    (`SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE | SPAN_FLAGS_CONTEXT_IS_REMOTE`), as the SDK writes a
    link whose context is remote."""
    trace_id, span_id = link
    body = b"\x0a\x10" + bytes.fromhex(trace_id) + b"\x12\x08" + span_id.to_bytes(8, "big")
    return _field(b"\x6a", body + b"\x35\x00\x03\x00\x00")


def _block_attributes(key: tuple[Any, ...]) -> tuple[tuple[str, Any], ...]:
    """The attributes (in the order `expand` gives them) of a block's key."""
    if key[0] == "code":
        return _code_attributes(key[1], key[2])
    if key[0] == "agent":
        return _agent_attributes(key[1], key[2])
    if key[0] == "model":
        _, provider, model, max_tokens, _, conversation, address, port, _ = key
        return _model_attributes(provider, model, max_tokens, conversation, address, port)
    if key[0] == "asked":
        _, alias, kind, attempt, _, temperature, _ = key
        asked: tuple[tuple[str, Any], ...] = (
            ("prose.model.alias", alias),
            ("prose.call.kind", kind),
            ("prose.call.attempt", attempt),
        )
        if temperature is not None:
            asked += (("gen_ai.request.temperature", temperature),)
        return asked
    _, finish, tokens_in, _, tokens_out, _, answered_by, cache_read, _, cache_write, _ = key
    answered: tuple[tuple[str, Any], ...] = (  # "answered"
        ("gen_ai.response.finish_reasons", (finish,)),
        ("gen_ai.usage.input_tokens", tokens_in),
        ("gen_ai.usage.output_tokens", tokens_out),
    )
    if cache_read:
        answered += (("gen_ai.usage.cache_read.input_tokens", cache_read),)
    if cache_write:
        answered += (("gen_ai.usage.cache_creation.input_tokens", cache_write),)
    if answered_by:
        answered += (("gen_ai.response.model", answered_by),)
    return answered


def _code_attributes(path: str, line: int) -> tuple[tuple[str, Any], ...]:
    """Where a statement is (the `code.*` conventions)."""
    return (("code.file.path", path), ("code.line.number", line))


def _agent_attributes(agent: str, conversation: str | None) -> tuple[tuple[str, Any], ...]:
    """A session of an agent: the GenAI `invoke_agent` operation (an agent run in process)."""
    named: tuple[tuple[str, Any], ...] = (("gen_ai.operation.name", "invoke_agent"),)
    if agent:
        named += (("gen_ai.agent.name", agent),)
    if conversation is not None:
        named += (("gen_ai.conversation.id", conversation),)
    return named


def _model_attributes(
    provider: str,
    model: str,
    max_tokens: Any,
    conversation: str | None,
    address: str | None,
    port: int | None,
) -> tuple[tuple[str, Any], ...]:
    """A model call's attributes that say what was asked of whom (the GenAI client span)."""
    named: tuple[tuple[str, Any], ...] = (
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", provider),
        ("gen_ai.system", provider),
        ("gen_ai.request.model", model),
        ("gen_ai.request.max_tokens", max_tokens),
    )
    if conversation is not None:
        named += (("gen_ai.conversation.id", conversation),)
    if address is not None:
        named += (("server.address", address), ("server.port", port))
    return named


# KeyValue keys (field 1) of the attributes written by `_text_attribute`.
_STEP = b"\x0a\x0aprose.step\x12"
_RESPONSE_ID = b"\x0a\x12gen_ai.response.id\x12"


def _text_attribute(key: bytes, value: Any) -> bytes:
    """`_attribute(key, value)` for one of the keys above, written at once for text."""
    if value.__class__ is not str:
        return _attribute(key[2:-1].decode(), value)
    data = value.encode("utf-8", "surrogatepass")
    size = len(data)
    if size < 100:  # every length is one byte (the keys are shorter than 25)
        return b"".join(
            (
                b"\x4a",
                _SMALL[len(key) + size + 3],
                key,
                _SMALL[size + 2],
                b"\x0a",
                _SMALL[size],
                data,
            )
        )
    text = b"\x0a" + varint(size) + data
    pair = key + varint(len(text)) + text
    return b"\x4a" + varint(len(pair)) + pair


def _opening(
    trace: bytes, span_id: int, parent: int | None, name_and_kind: bytes, start: int, end: int
) -> list[bytes]:
    """A span's fields up to its attributes, the trace id's and name's already encoded."""
    parts = [trace, _pack_id(0x1208, span_id)]
    if parent is not None:
        parts.append(_pack_id(0x2208, parent))
    parts.append(name_and_kind)
    if start and end:
        parts.append(_pack_times(0x39, start, 0x41, end))
    else:
        _times(parts, start, end)
    return parts


def _times(parts: list[bytes], start: int, end: int) -> None:
    if start and end:
        parts.append(_pack_times(0x39, start, 0x41, end))
        return
    if start:  # proto3 leaves out a zero
        parts.append(b"\x39" + _pack_u64(start))
    if end:
        parts.append(b"\x41" + _pack_u64(end))


def _ending(parts: list[bytes], error: str | None, code: int, why: str | None) -> bytes:
    """A flat span's error type and status appended to `parts`, joined."""
    if error:
        parts.append(_attribute("error.type", error))
    if code == 0:
        parts.append(_SUCCEEDED)
    else:
        _status(parts, code, why)
    return b"".join(parts)


def _status(parts: list[bytes], code: int, why: str | None) -> None:
    """A span's status and flags, its last fields."""
    if code == 0:
        parts.append(_SUCCEEDED)  # an UNSET status is still a (empty) message
        return
    status = _text(b"\x12", why) if code == _ERROR and why else b""
    parts.append(_field(b"\x7a", status + b"\x18" + _SMALL[code]))
    parts.append(b"\x85\x01\x00\x01\x00\x00")  # flags: SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE
