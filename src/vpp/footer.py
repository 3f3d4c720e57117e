"""The compliance footer:
`[Version=vX.Y | Tag=<tag>_<n> | Sources=none|web | Assumptions=<n> | Cycle=<i>/3 | Locus=<name>]`.

`parse_footer` is lenient: it reads the variants models produce in the wild
(`Tag=q`, `Tag=<q_1>`, `Sources=<none>`, a missing `Locus`, odd spacing or order,
Markdown emphasis or code marks around the line) and records each departure from
the canonical form as a `Deviation`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vpp.versions import (
    ASSISTANT_TAGS,
    COUNT_DIGITS,
    CYCLE_LIMIT,
    LOCUS_NAME_1_5,
    SOURCES,
    Version,
    footer_version,
    small_count,
)

FIELDS: tuple[str, ...] = ("Version", "Tag", "Sources", "Assumptions", "Cycle", "Locus")
_REQUIRED = FIELDS[:-1]  # Locus is reported separately: 1.4 marks its name optional
_TAG_VALUE = re.compile(r"^([a-z_]+?)(?:_(\d+))?$")
_CYCLE_VALUE = re.compile(r"^(\d+)(?:\s*/\s*(\d+))?$")
_VERSION_VALUE = re.compile(r"^(v?)(\d+\.\d+(?:\.\d+)?)$")


_SHOWN = 40  # characters of a footer value quoted in a message


def _shown(value: str) -> str:
    """A footer value as a message quotes it: long ones cut, the line stays readable."""
    return value if len(value) <= _SHOWN else f"{value[: _SHOWN - 1]}… ({len(value):,} characters)"


@dataclass(frozen=True)
class Deviation:
    """A departure from the canonical footer. `cosmetic` ones are tolerated when not strict."""

    code: str
    message: str
    cosmetic: bool = False


@dataclass(frozen=True)
class Footer:
    """Footer fields as read; a field is None when absent or unreadable."""

    raw: str
    version: str | None = None
    tag: str | None = None
    index: int | None = None
    sources: str | None = None
    assumptions: int | None = None
    cycle: int | None = None
    locus: str | None = None
    deviations: tuple[Deviation, ...] = field(default=())

    @property
    def canonical(self) -> bool:
        return not self.deviations


def build_footer(
    tag: str,
    index: int,
    *,
    cycle: int,
    locus: str,
    sources: str = "none",
    assumptions: int = 0,
    version: Version = "1.4",
) -> str:
    """Render the canonical footer line; raises ValueError on out-of-range fields."""
    if tag not in ASSISTANT_TAGS:
        raise ValueError(f"footer tag must be an assistant tag, got {tag!r}")
    if index < 1:
        raise ValueError(f"tag index must be >= 1, got {index}")
    if sources not in SOURCES:
        raise ValueError(f"sources must be one of {SOURCES}, got {sources!r}")
    if assumptions < 0:
        raise ValueError(f"assumptions must be >= 0, got {assumptions}")
    if not 1 <= cycle <= CYCLE_LIMIT:
        raise ValueError(f"cycle must be within 1..{CYCLE_LIMIT}, got {cycle}")
    if version == "1.5" and not LOCUS_NAME_1_5.match(locus):
        raise ValueError(f"invalid 1.5 locus name {locus!r}")
    if "|" in locus or "]" in locus or "\n" in locus:
        raise ValueError(f"locus name must not contain '|', ']' or a line break: {locus!r}")
    return (
        f"[Version={footer_version(version)} | Tag={tag}_{index} | Sources={sources} | "
        f"Assumptions={assumptions} | Cycle={cycle}/{CYCLE_LIMIT} | Locus={locus}]"
    )


_DECORATION = "*`"  # Markdown emphasis or code marks models put around the footer


def looks_like_footer(line: str) -> bool:
    """A line that is meant as a footer, however malformed."""
    text = line.strip().strip(_DECORATION)
    return text.startswith("[") and ("Version=" in text or "Tag=" in text)


def parse_footer(text: str, version: Version = "1.4") -> Footer:
    """Read a footer line leniently; raises ValueError when it is not footer-like at all."""
    raw = text.strip()
    if not looks_like_footer(raw):
        raise ValueError("not a VPP footer: expected a line like [Version=v1.x | Tag=... ]")
    return _FooterReader(raw, version).read()


# A source label as the 1.4 seed writes one (`preprint-2024-02`, `prior-cycle`).
_SOURCE_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}")


class _FooterReader:
    def __init__(self, raw: str, version: Version) -> None:
        self.raw = raw
        self.version = version
        self.deviations: list[Deviation] = []
        self.values: dict[str, str] = {}

    def _deviate(self, code: str, message: str, *, cosmetic: bool = False) -> None:
        self.deviations.append(Deviation(code, message, cosmetic))

    def read(self) -> Footer:
        line = self.raw.strip(_DECORATION)
        if line != self.raw:
            self._deviate(
                "footer-decorated",
                "Write the footer as plain text, without Markdown marks ('*', '`') around it.",
                cosmetic=True,
            )
        inner = line[1:]
        if inner.endswith("]"):
            inner = inner[:-1]
        else:
            self._deviate("footer-unclosed", "Footer must end with ']'.")
        order, canonical_parts = self._read_fields(inner)
        self._check_layout(order)
        if inner != " | ".join(canonical_parts):
            self._deviate(
                "footer-spacing",
                "Footer fields must be separated by ' | ' with no other spaces.",
                cosmetic=True,
            )
        return Footer(
            raw=self.raw,
            version=self._version(),
            tag=(tag := self._tag())[0],
            index=tag[1],
            sources=self._sources(),
            assumptions=self._assumptions(),
            cycle=self._cycle(),
            locus=self._locus(),
            deviations=tuple(self.deviations),
        )

    def _read_fields(self, inner: str) -> tuple[list[str], list[str]]:
        order: list[str] = []
        canonical_parts: list[str] = []
        for part in inner.split("|"):
            name, equals, value = part.strip().partition("=")
            name = name.strip()
            canonical_parts.append(f"{name}={value.strip()}" if equals else part.strip())
            if not equals:
                self._deviate(
                    "footer-field-malformed", f"Footer entry {part.strip()!r} is not Key=Value."
                )
            elif name not in FIELDS:
                self._deviate("footer-unknown-field", f"Footer field {name!r} is not part of VPP.")
            elif name in self.values:
                self._deviate(
                    "footer-duplicate-field", f"Footer field {name} appears more than once."
                )
            else:
                self.values[name] = value.strip()
                order.append(name)
        return order, canonical_parts

    def _check_layout(self, order: list[str]) -> None:
        if order != [name for name in FIELDS if name in order]:
            self._deviate(
                "footer-field-order",
                f"Footer fields must appear in the order {', '.join(FIELDS)}.",
                cosmetic=True,
            )
        for name in _REQUIRED:
            if name not in self.values:
                self._deviate(f"footer-{name.lower()}-missing", f"Footer lacks the {name} field.")
        if "Locus" not in self.values:
            self._deviate("footer-locus-missing", "Footer lacks the Locus field.", cosmetic=True)

    def _value(self, name: str) -> str | None:
        """The field value with template angle brackets removed (and reported): `<q_1>`,
        and also `<q>_<1>` or `<1>/3`, as copied from the templates `Tag=<tag>_<index>`
        and `Cycle=<i>/3`."""
        value = self.values.get(name)
        if value is None:
            return None
        if "<" in value or ">" in value:
            bare = value.replace("<", "").replace(">", "").strip()
            self._deviate(
                f"footer-{name.lower()}-brackets",
                f"Write {name}={bare}, not {name}={value}: the angle brackets in the "
                "footer template are placeholders.",
                cosmetic=True,
            )
            return bare
        return value

    def _invalid(self, name: str, value: str, expected: str) -> None:
        self._deviate(
            f"footer-{name.lower()}-invalid",
            f"{name}={_shown(value)} is invalid; expected {expected}.",
        )

    def _version(self) -> str | None:
        value = self._value("Version")
        if value is None:
            return None
        match = _VERSION_VALUE.match(value)
        if match is None:
            self._invalid("Version", value, "vX.Y")
            return None
        if not match.group(1):
            self._deviate(
                "footer-version-format", f"Write Version=v{value}, with the 'v'.", cosmetic=True
            )
        return "v" + match.group(2)

    def _tag(self) -> tuple[str | None, int | None]:
        value = self._value("Tag")
        if value is None:
            return None, None
        match = _TAG_VALUE.match(value)
        name: str
        index: str | None
        if value in ASSISTANT_TAGS:
            name, index = value, None
        elif match is not None and match.group(1) in ASSISTANT_TAGS:
            name, index = match.group(1), match.group(2)
        else:
            self._invalid("Tag", value, "an assistant tag with its instance index, e.g. q_1")
            return None, None
        if index is None:
            self._deviate(
                "footer-tag-index-missing",
                f"Tag={value} lacks its instance index; write Tag={name}_<n>.",
                cosmetic=True,
            )
            return name, None
        number = small_count(index)
        if number is None or number < 1:
            self._invalid("Tag", value, f"an instance index from 1 to {COUNT_DIGITS} digits long")
            return name, None
        return name, number

    def _sources(self) -> str | None:
        value = self._value("Sources")
        if value is None or value in SOURCES:
            return value
        if self.version == "1.4" and _SOURCE_LABEL.fullmatch(value):
            # The 1.4 seed's footer is `Sources=<...>` and its examples write
            # `Sources=preprint-2024-02` / `prior-cycle`; the full 1.4 spec says none|web.
            # The seed wins over the reference: a label is cosmetic (--lenient accepts it).
            self._deviate(
                "footer-sources-label",
                f"Sources={_shown(value)} is a label; the full 1.4 spec writes none or web.",
                cosmetic=True,
            )
            return value
        self._invalid("Sources", value, "none or web")
        return value

    def _assumptions(self) -> int | None:
        value = self._value("Assumptions")
        if value is None:
            return None
        count = small_count(value)
        if count is None:
            self._invalid(
                "Assumptions", value, f"a non-negative integer of {COUNT_DIGITS} digits at most"
            )
        return count

    def _cycle(self) -> int | None:
        value = self._value("Cycle")
        if value is None:
            return None
        match = _CYCLE_VALUE.match(value)
        cycle = small_count(match.group(1)) if match is not None else None
        if match is None or cycle is None or not 1 <= cycle <= CYCLE_LIMIT:
            self._invalid("Cycle", value, f"i/{CYCLE_LIMIT} with i in 1..{CYCLE_LIMIT}")
            return None
        if match.group(2) is None:
            self._deviate(
                "footer-cycle-format", f"Write Cycle={value}/{CYCLE_LIMIT}.", cosmetic=True
            )
        elif match.group(2) != str(CYCLE_LIMIT) or value != f"{match.group(1)}/{match.group(2)}":
            self._invalid("Cycle", value, f"i/{CYCLE_LIMIT}")
        return cycle

    def _locus(self) -> str | None:
        value = self._value("Locus")
        if value is None:
            return None
        if self.version == "1.5" and not LOCUS_NAME_1_5.match(value):
            self._invalid("Locus", value, "1-64 letters, digits, spaces, '.', '_', '/' or '-'")
        return value
