"""Which NDJSON lines *surely* hold valid messages? Decoded and checked in C by msgspec, with
types compiled from the package's JSON Schema.

Most lines of a stream hold valid messages, so the question worth making cheap is "is this
one fine?". The schema is compiled once, at import, into msgspec types: one struct per
message type (a tagged union on ``type``), so the field shapes, enums, lengths and ranges
and the per-type requirements of the schema's ``allOf`` are checked while the bytes are
decoded, without building a dict. What msgspec cannot state — the main timestamp (a cache
of learnt minutes beats the pattern) and the high-confidence rule — is checked on whole
columns of a batch of decoded lines. A line that fails is "not sure": the caller parses it
with orjson and asks the explaining validator (:func:`vlp.validate.check_message`), which,
with the schema, is the reference. Tests prove that whatever this accepts, orjson parses
and both the schema and that validator accept.

orjson is our parser of record. msgspec's parser also admits integer literals beyond the
double range, which orjson refuses; such a number can only hide in a free-form value (an
object ``content``, ``payload``, ``_extras``). So there are two decoders:
the *plain* one admits no free-form value and settles the common message; the *open* one,
tried only on lines the plain one refuses, admits them on lines without a run of 300
digits (an integer orjson refuses has more than 300).

The compiler knows exactly the constructs the schema uses and raises
:class:`SchemaNotCompiled` on any other, so a change to the schema cannot silently loosen
this path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from itertools import compress, repeat
from operator import ge
from types import GenericAlias
from typing import Annotated, Any, Literal, Union

import msgspec
import orjson
from msgspec import UNSET, UnsetType

from vlp._columns import columns
from vlp._keyscan import lines_repeating_keys
from vlp.schema import KIND_CODES, load_schema
from vlp.validate import bad_timestamps

_NOT_SURE = (msgspec.MsgspecError, RecursionError, UnicodeDecodeError)
_long_number = re.compile(rb"[0-9]{300}").search
_TIMESTAMP_REF = "#/$defs/utc_timestamp"
# Absent fields the thread checks read get values no valid message can hold ("" and -1),
# so the checks compare whole columns of them without testing for UNSET.
_THREAD_DEFAULTS: dict[str, Any] = {"refers_to": "", "session_id": "", "seq": -1}
_IGNORED = {"$comment", "format", "description", "title"}

Predicate = Callable[[Any], bool]


class SchemaNotCompiled(ValueError):
    """The schema uses a construct the fast path does not know how to compile."""


def _attribute(name: str) -> str:
    return name.lstrip("_")  # msgspec keeps leading underscores for private attributes


def _keys(spec: dict[str, Any], where: str, allowed: set[str]) -> dict[str, Any]:
    spec = {key: value for key, value in spec.items() if key not in _IGNORED}
    if set(spec) - allowed:
        raise SchemaNotCompiled(f"{where}: {sorted(set(spec) - allowed)}")
    return spec


def _merged(first: Any, second: Any, where: str) -> Any:
    """Both fragments at once (``allOf`` of two), for the per-type requirements."""
    if second is True:
        return first
    if not isinstance(first, dict) or not isinstance(second, dict):
        raise SchemaNotCompiled(f"{where}: cannot merge {first!r} and {second!r}")
    merged = dict(first)
    for key, value in second.items():
        if key in merged and merged[key] != value:
            raise SchemaNotCompiled(f"{where}: {key} differs")
        merged[key] = value
    return merged


class _Compiler:
    """Schema fragments to msgspec types. ``open_values`` admits free-form values (an
    object without properties, ``true``), decoded whole; without it, a field or an
    alternative that needs one is left out, so a line using it fails to decode. Unknown
    fields fail both."""

    def __init__(self, schema: dict[str, Any], *, open_values: bool) -> None:
        self.schema = schema
        self.open = open_values
        self._count = 0
        # A nested object's struct, by place and spec: the message types share theirs
        # (10 structs instead of 28, less to compile at each start-up).
        self._nested: dict[tuple[str, bytes], type[msgspec.Struct]] = {}

    def type_of(self, spec: Any, where: str) -> Any:
        """The msgspec type of a schema fragment; None when it is left out."""
        if spec is True:
            return Any if self.open else None
        if not isinstance(spec, dict):
            raise SchemaNotCompiled(f"{where}: {spec!r}")
        spec = {key: value for key, value in spec.items() if key not in _IGNORED}
        if "$ref" in spec:
            return self._timestamp(spec, where)
        if "const" in spec:
            _keys(spec, where, {"const"})
            return Literal[spec["const"]]
        if "enum" in spec:
            _keys(spec, where, {"enum"})
            return Literal[tuple(spec["enum"])]
        if "oneOf" in spec:
            return self._one_of(spec, where)
        kind = spec.get("type")
        if kind == "string":
            return _constrained(spec, where, str, {"minLength": "min_length"})
        if kind == "integer":
            return _constrained(spec, where, int, {"minimum": "ge", "maximum": "le"})
        if kind == "number":
            return _constrained(spec, where, float, {"minimum": "ge", "maximum": "le"})
        if kind == "boolean":
            _keys(spec, where, {"type"})
            return bool
        if kind == "array":
            items = self.type_of(spec.get("items", True), f"{where}[]")
            if items is None:
                return None
            return _constrained(
                spec,
                where,
                GenericAlias(list, (items,)),
                {"minItems": "min_length"},
                frozenset({"items"}),
            )
        if kind == "object":
            if "properties" not in spec:
                _keys(spec, where, {"type"})
                return dict[str, Any] if self.open else None
            return self.struct(spec, where)
        raise SchemaNotCompiled(f"{where}: {spec!r}")

    def _timestamp(self, spec: dict[str, Any], where: str) -> Any:
        if spec != {"$ref": _TIMESTAMP_REF}:
            raise SchemaNotCompiled(f"{where}: {spec!r}")
        target = _keys(self.schema["$defs"]["utc_timestamp"], where, {"type", "pattern"})
        if target != {"type": "string", "pattern": target["pattern"]}:
            raise SchemaNotCompiled(f"{where}: {target!r}")
        if where == "timestamp":  # the hot one: checked on columns (bad_timestamps)
            return str
        return Annotated[str, msgspec.Meta(pattern=target["pattern"])]

    def _one_of(self, spec: dict[str, Any], where: str) -> Any:
        choices = _keys(spec, where, {"oneOf"})["oneOf"]
        kinds = [choice.get("type") for choice in choices]
        if None in kinds or len(set(kinds)) != len(kinds):
            # Alternatives of distinct JSON types exclude each other: oneOf is anyOf.
            raise SchemaNotCompiled(f"{where}: oneOf needs alternatives of distinct types")
        types = [self.type_of(choice, where) for choice in choices]
        kept = tuple(choice for choice in types if choice is not None)
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007

    def fields(self, spec: dict[str, Any], where: str) -> list[tuple[str, Any, Any]]:
        """defstruct fields of an object's properties. Optional ones default to UNSET, or
        at the top level to the thread checks' values."""
        spec = _keys(spec, where, {"type", "properties", "required", "additionalProperties"})
        if spec.get("additionalProperties", True) is not True:
            raise SchemaNotCompiled(f"{where}: additionalProperties")
        required = set(spec.get("required", ()))
        found: list[tuple[str, Any, Any]] = []
        for name, property_spec in spec["properties"].items():
            path = f"{where}.{name}" if where else name
            kind = self.type_of(property_spec, path)
            if kind is None:
                if name in required:
                    raise SchemaNotCompiled(f"{path}: a required free-form value")
                continue  # the plain decoder refuses the field
            if name in required:
                found.append((_attribute(name), kind, msgspec.field(name=name)))
                continue
            default = UNSET if where else _THREAD_DEFAULTS.get(name, UNSET)
            if default is UNSET:
                kind = Union[kind, UnsetType]  # noqa: UP007
            found.append((_attribute(name), kind, msgspec.field(default=default, name=name)))
        return found

    def struct(self, spec: dict[str, Any], where: str, **options: Any) -> type[msgspec.Struct]:
        if options:
            return self._new_struct(spec, where, options)
        key = (where, orjson.dumps(spec, option=orjson.OPT_SORT_KEYS))
        known = self._nested.get(key)
        if known is None:
            known = self._nested[key] = self._new_struct(spec, where, options)
        return known

    def _new_struct(
        self, spec: dict[str, Any], where: str, options: dict[str, Any]
    ) -> type[msgspec.Struct]:
        self._count += 1
        return msgspec.defstruct(
            f"_{where.replace('.', '_') or 'message'}_{self._count}",
            self.fields(spec, where),
            kw_only=True,
            gc=False,
            # Always: msgspec skips an unknown field's value without checking it all (a
            # key that is not UTF-8 passes), so a line with one goes to orjson.
            forbid_unknown_fields=True,
            **options,
        )


def _constrained(
    spec: dict[str, Any],
    where: str,
    base: Any,
    names: dict[str, str],
    also: frozenset[str] = frozenset(),
) -> Any:
    _keys(spec, where, {"type", *names, *also})
    meta = {names[key]: value for key, value in spec.items() if key in names}
    return Annotated[base, msgspec.Meta(**meta)] if meta else base


def _types_of(condition: dict[str, Any], where: str) -> list[str] | None:
    """The message types an ``if`` that only tests ``type`` selects (None if it tests
    more)."""
    if set(condition) != {"required", "properties"} or condition["required"] != ["type"]:
        return None
    if set(condition["properties"]) != {"type"}:
        return None
    test = condition["properties"]["type"]
    if set(test) == {"const"}:
        return [test["const"]]
    if set(test) == {"enum"}:
        return list(test["enum"])
    raise SchemaNotCompiled(f"{where}: {test!r}")


def _holds(spec: dict[str, Any], value: str, where: str) -> str:
    """A Python expression testing the decoded ``value`` (a struct or a list) against a
    fragment of the rule's ``anyOf``. The decoder already checked JSON types, so only
    requirements, lengths and consts remain."""
    spec = _keys(spec, where, {"type", "required", "properties", "minItems", "const"})
    tests: list[str] = []
    for name in spec.get("required", ()):
        tests.append(f"not ({_absent(name, value)})")
    for name, inner in spec.get("properties", {}).items():
        field = f"{value}.{_attribute(name)}"
        inner_test = _holds(inner, field, f"{where}.{name}")
        tests.append(f"{_absent(name, value)} or {inner_test}")
    if "minItems" in spec:
        tests.append(f"len({value}) >= {int(spec['minItems'])}")
    if "const" in spec:
        tests.append(f"{value} == {spec['const']!r}")
    return " and ".join(f"({test})" for test in tests) or "True"


def _absent(name: str, value: str) -> str:
    """An expression: field ``name`` of ``value`` was absent from the line."""
    field = f"{value}.{_attribute(name)}"
    if name in _THREAD_DEFAULTS:
        return f"{field} == {_THREAD_DEFAULTS[name]!r}"
    return f"{field} is UNSET"


class _ConfidenceRule:
    """``if confidence >= threshold and type is not one of exempt then anyOf [...]``: the
    one cross-field rule of the schema a decoder cannot state, checked on columns by a
    test compiled from the rule."""

    def __init__(self, rule: dict[str, Any], where: str) -> None:
        condition = _keys(rule["if"], where, {"required", "properties"})
        tests = condition["properties"]
        if condition["required"] != ["confidence"] or set(tests) != {"confidence", "type"}:
            raise SchemaNotCompiled(f"{where}: {condition!r}")
        level = _keys(tests["confidence"], where, {"type", "minimum"})
        exempt = tests["type"].get("not", {})
        if level.get("type") != "number" or set(exempt) != {"const"}:
            raise SchemaNotCompiled(f"{where}: {condition!r}")
        self.threshold: float = level["minimum"]
        choices = _keys(rule["then"], where, {"anyOf"})["anyOf"]
        earned = " or ".join(f"({_holds(c, 'shape', f'{where}.then')})" for c in choices)
        source = f"lambda shape: shape.code == {KIND_CODES[exempt['const']]} or {earned}"
        self.source = source
        self.holds: Predicate = eval(source, {"UNSET": UNSET})  # text built above, no input

    def broken_by(self, shapes: list[Any], confidences: list[float]) -> list[int]:
        """Indexes of the ``shapes`` that break the rule."""
        high = compress(range(len(confidences)), map(ge, confidences, repeat(self.threshold)))
        holds = self.holds
        return [index for index in high if not holds(shapes[index])]


def free_form_fields(schema: dict[str, Any]) -> list[str]:
    """The top-level fields whose schema admits a free-form value somewhere (``true`` or
    an object without properties): what the plain decoder refuses and the open one
    decodes."""
    return [name for name, spec in schema["properties"].items() if _admits_free_form(spec)]


def _admits_free_form(spec: Any) -> bool:
    if spec is True:
        return True
    if isinstance(spec, list):
        return any(map(_admits_free_form, spec))
    if not isinstance(spec, dict):
        return False
    if spec.get("type") == "object" and "properties" not in spec:
        return True
    return any(_admits_free_form(value) for value in spec.values())


def compile_schema(schema: dict[str, Any], *, open_values: bool) -> tuple[Any, _ConfidenceRule]:
    """The tagged union of per-type structs, and the rule left for the columns."""
    compiler = _Compiler(schema, open_values=open_values)
    top = _keys(
        schema,
        "",
        {
            "$schema",
            "$id",
            "$defs",
            "type",
            "required",
            "properties",
            "additionalProperties",
            "allOf",
        },
    )
    if top.get("additionalProperties", True) is not True:
        raise SchemaNotCompiled("additionalProperties")
    properties: dict[str, Any] = dict(top["properties"])
    kinds = properties.pop("type")
    if kinds != {"enum": list(KIND_CODES)}:
        raise SchemaNotCompiled(f"type: {kinds!r}")
    required = {kind: set(top["required"]) - {"type"} for kind in KIND_CODES}
    narrowed: dict[str, dict[str, Any]] = {kind: dict(properties) for kind in KIND_CODES}
    rule: _ConfidenceRule | None = None
    for number, part in enumerate(top.get("allOf", ())):
        where = f"allOf[{number}]"
        part = _keys(part, where, {"if", "then"})
        selected = _types_of(part["if"], where)
        if selected is None:
            if rule is not None:
                raise SchemaNotCompiled(f"{where}: a second cross-field rule")
            rule = _ConfidenceRule(part, where)
            continue
        then = _keys(part["then"], where, {"required", "properties"})
        for kind in selected:
            required[kind] |= set(then.get("required", ()))
            for name, extra in then.get("properties", {}).items():
                narrowed[kind][name] = _merged(narrowed[kind][name], extra, f"{where}.{name}")
    if rule is None:
        raise SchemaNotCompiled("the high-confidence rule is missing")
    structs = tuple(
        compiler.struct(
            {"properties": narrowed[kind], "required": sorted(required[kind])},
            "",
            tag_field="type",
            tag=kind,
            namespace={"code": code},
        )
        for kind, code in KIND_CODES.items()
    )
    return Union[structs], rule  # noqa: UP007


_SCHEMA = load_schema()
_PLAIN, _RULE = compile_schema(_SCHEMA, open_values=False)
_decode_plain = msgspec.json.Decoder(_PLAIN).decode


@cache
def _open_decoder() -> Callable[[bytes], Any]:
    """Compiled on first need (~8 ms): many streams never hold a free-form value, and a
    `vlp validate` of a few lines is mostly start-up."""
    return msgspec.json.Decoder(compile_schema(_SCHEMA, open_values=True)[0]).decode


def _decode_open(line: bytes) -> Any:
    return _open_decoder()(line)


# msgspec names the first thing it refuses, and the decoders differ only on free-form
# values: the open one can accept a line only when that first refusal is of one.
# One alternation after a common "`" (not one branch per name, each starting with it): ~3x
# faster on the refusals of a stream (~1 line in 12 of the bench).
_FREE_FORM = re.compile(f"`(?:\\$\\.)?(?:{'|'.join(map(re.escape, free_form_fields(_SCHEMA)))})`")


class _Doubt:
    """Stands in for a line the decoders refused, passing the column checks; its thread
    fields are those of a line nothing can be read of (:data:`vlp.thread.ThreadFields`)."""

    __slots__ = ()
    timestamp = "2000-01-01T00:00:00Z"
    confidence = 0.0
    code = 0
    id = refers_to = session_id = ""
    seq = -1


DOUBT: Any = _Doubt()


def decode_lines(lines: list[bytes]) -> tuple[list[Any], list[int]]:
    """Every line decoded: ``(shapes, doubtful)``, one shape per line, with ``id``,
    ``code`` (of the type, :data:`vlp.schema.KIND_CODES`), ``refers_to``, ``session_id``,
    ``seq`` and the other fields; :data:`DOUBT` stands in for each line not surely valid,
    whose indexes ``doubtful`` lists in order."""
    shapes: list[Any] = []
    doubtful: list[int] = []
    open_values: list[int] = []
    remaining = iter(lines)
    while True:
        try:
            shapes.extend(map(_decode_plain, remaining))  # the valid run, driven from C
            break
        except _NOT_SURE as error:  # the refused line was consumed: note it, go on after it
            if _FREE_FORM.search(str(error)):
                open_values.append(len(shapes))
            else:
                doubtful.append(len(shapes))
            shapes.append(DOUBT)
    if open_values:
        decode_open = _open_decoder()
        for index in open_values:
            try:
                line = lines[index]
                shape = decode_open(line)
            except _NOT_SURE:
                doubtful.append(index)
                continue
            if _long_number(line):
                doubtful.append(index)
            else:
                shapes[index] = shape
        doubtful.sort()
    timestamps, confidences = columns(shapes, ("timestamp", "confidence"))
    broken = bad_timestamps(timestamps)
    broken += _RULE.broken_by(shapes, confidences)
    broken += _repeating_keys(lines, doubtful)
    if broken:
        for index in broken:
            shapes[index] = DOUBT
        doubtful = sorted(set(doubtful).union(broken))
    return shapes, doubtful


def _repeating_keys(lines: list[bytes], doubtful: list[int]) -> list[int]:
    """Indexes of the decoded lines that may give a key twice (the decoders keep the last
    value silently): the explaining path finds the repetitions."""
    repeating = lines_repeating_keys(lines)
    if not repeating or not doubtful:
        return repeating
    skip = set(doubtful)
    return [index for index in repeating if index not in skip]


def is_surely_valid_line(line: bytes) -> bool:
    """True only for an NDJSON line holding a valid message that orjson parses."""
    return not decode_lines([line])[1]
