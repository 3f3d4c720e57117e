"""Checking one exchange (user command + assistant reply) and repairing the reply."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vpp.footer import FIELDS, Footer, build_footer, looks_like_footer, parse_footer
from vpp.grammar import parse_command
from vpp.reply import Reply, read_reply, trim_blank_lines
from vpp.state import ConversationState, Expectation, expect, initial_state
from vpp.versions import ASSISTANT_TAGS, ESCAPE_HINTS, SOURCES, Version, footer_version

_FIELD_NAMES = re.compile(rf"\b({'|'.join(FIELDS)})=", re.IGNORECASE)


def _template_case(match: re.Match[str]) -> str:
    return match.group(1).capitalize() + "="


QUESTION_LIMIT = 25
# The body 1.5's reference runtime gives a repaired reply that had none.
STRUCTURAL_BODY = (
    "Protocol response repaired structurally."  # 1.4 §III: at most 25 questions in any <c>
)
_NESTED_HEADER = re.compile(r"^<(?:g|q|o|c|o_f)>$")
_NESTED_FOOTER = re.compile(r"^[*`]*\[Version=v?\d+\.\d+")
_QUESTION_END = re.compile(r"\?(?=[\s)\"'*_`]|$)")
_EXAMPLE_COMMAND = re.compile(r"!<[a-z_]+>(?: +--[^\s`'\"]+)*")


@dataclass(frozen=True)
class Violation:
    """A rule the exchange broke: stable `code`, readable `message`, and where (1-based)."""

    code: str
    message: str
    line: int = 1
    column: int = 1

    def as_dict(self) -> dict[str, str | int]:
        return {"code": self.code, "message": self.message, "line": self.line}


@dataclass(frozen=True)
class ExchangeResult:
    """The verdict on one assistant reply."""

    expectation: Expectation
    reply_tag: str  # the tag the reply is taken to have (the expected one if it was wrong)
    command_violations: tuple[Violation, ...]  # problems with the user's command line
    violations: tuple[Violation, ...]  # problems with the assistant's reply
    next_state: ConversationState
    repaired: str | None = None

    @property
    def ok(self) -> bool:
        # 1.5 routes an invalid command to <c> with its recovery body: a normal path, so
        # the user's error is information about the user turn, not a failed exchange.
        if self.expectation.version == "1.5":
            return not self.violations
        return not self.violations and not self.command_violations


def command_violations(user_message: str, version: Version = "1.4") -> tuple[Violation, ...]:
    """The user's line-1 errors, as violations located on line 1."""
    command = parse_command(user_message, version)
    return tuple(Violation(p.code, p.message, 1, p.column) for p in command.errors)


def validate_exchange(
    user: str,
    assistant: str,
    state: ConversationState | None = None,
    *,
    strict: bool = True,
    repair: bool = False,
    new_locus: str | None = None,
) -> ExchangeResult:
    """Check `assistant`'s reply to `user` against the protocol at `state`.

    `strict=False` tolerates cosmetic footer variants (brackets, missing index or
    Locus, spacing, order). With `repair=True` the result carries the reply with
    the correct tag line and footer; the body is kept, except where the protocol
    fixes it (invalid-command recovery, the cycle-3 escape choices).
    """
    expectation = expect(user, state or initial_state(), new_locus=new_locus)
    reply = read_reply(assistant, expectation.version)
    checker = _ReplyChecker(expectation, reply, strict)
    violations = checker.run()
    used_tag = checker.used_tag
    footer_locus = reply.footer.locus if reply.footer else None
    footer_cycle = reply.footer.cycle if reply.footer else None
    repaired = None
    if repair:
        repaired = assistant if not violations else _repair(expectation, reply, used_tag)
        if repaired is not assistant and "\r\n" in assistant:
            repaired = repaired.replace("\n", "\r\n")  # keep the message's CRLF line ends
    return ExchangeResult(
        expectation=expectation,
        reply_tag=used_tag,
        command_violations=command_violations(user, expectation.version),
        violations=tuple(violations),
        next_state=expectation.next_state(used_tag, footer_locus, footer_cycle),
        repaired=repaired,
    )


class _ReplyChecker:
    def __init__(self, expectation: Expectation, reply: Reply, strict: bool) -> None:
        self.expectation = expectation
        self.reply = reply
        self.strict = strict
        self.version = expectation.version
        self.found: list[Violation] = []
        header = reply.header
        allowed = header is not None and header.tag in expectation.reply_tags
        self.used_tag = header.tag if header and allowed else expectation.reply_tag

    def _add(self, code: str, message: str, line: int | None = None) -> None:
        self.found.append(Violation(code, message, line or 1))

    def run(self) -> list[Violation]:
        self._check_header()
        self._check_footer()
        self._check_body()
        return self.found

    def _check_header(self) -> None:
        header, wanted = self.reply.header, f"<{self.used_tag}>"
        if self.reply.fence_line is not None:
            self._add(
                "missing-or-invalid-header",
                f"The reply is wrapped in a Markdown code fence; remove the fence lines so"
                f" that line 1 is the bare tag {wanted} and the footer is the last line.",
                self.reply.fence_line,
            )
        if header is None:
            line = self.reply.body_start
            later = next(
                (n for n, text in enumerate(self.reply.lines[:6], 1) if text.strip() == wanted),
                None,
            )
            found = (
                f" (it is on line {later}: remove the text before it)"
                if later and later > 1
                else ""
            )
            self._add(
                "missing-or-invalid-header", f"Line 1 must be the bare tag {wanted}{found}.", line
            )
            return
        if header.line > 1 and self.version == "1.5" and self.reply.fence_line is None:
            self._add(
                "missing-or-invalid-header",
                f"Line 1 must be the bare tag {wanted}; remove the blank lines before it.",
                1,
            )
        if not header.bare:
            if header.bang:
                problem = "must not carry the user's '!'"
            elif header.decorated:
                problem = "must be the bare tag, without Markdown marks"
            elif header.rest.strip():
                problem = "must hold the tag alone"
            else:
                problem = "must hold the tag alone, without spaces around it"
            self._add(
                "missing-or-invalid-header",
                f"Line 1 {problem}: write {wanted} on its own line.",
                header.line,
            )
        if header.tag not in self.expectation.reply_tags:
            expected = " or ".join(f"<{tag}>" for tag in self.expectation.reply_tags)
            why = "" if header.tag in ASSISTANT_TAGS else " (not an assistant tag)"
            self._add(
                "tag-mismatch", f"Expected {expected} but found <{header.tag}>{why}.", header.line
            )

    def _footer_problem(self, code: str, message: str, line: int | None) -> None:
        self._add("missing-or-malformed-footer" if self.version == "1.5" else code, message, line)

    def _check_footer(self) -> None:
        footer, line = self.reply.footer, self.reply.footer_line
        if footer is None:
            last = max(self.reply.body_end - 1, 1)
            text = self.reply.lines[last - 1] if last <= len(self.reply.lines) else ""
            inline = text.find("[Version=")
            where = (
                f" (it is at column {inline + 1}: put it on a line of its own)"
                if inline > 0 and text[:inline].strip()
                else ""
            )
            if not where and looks_like_footer(_FIELD_NAMES.sub(_template_case, text)):
                where = (
                    " (the last line names the footer's fields in another letter case: write "
                    + ", ".join(f"{name}=" for name in FIELDS)
                    + " as the template does)"
                )
            self._add(
                "missing-or-malformed-footer",
                f"The reply must end with the compliance footer line{where}.",
                last,
            )
            return
        if self.reply.trailing_start is not None:
            self._footer_problem(
                "text-after-footer",
                "The footer must be the last line; move the text after it into the body.",
                self.reply.trailing_start,
            )
        for deviation in footer.deviations:
            if self.strict or not deviation.cosmetic:
                self._footer_problem(deviation.code, deviation.message, line)
        self._check_footer_fields(footer, line)

    def _mismatch(self, field: str, message: str, line: int | None) -> None:
        """A footer field that differs from the deterministic transition: 1.5's failure
        table names it `<field>-mismatch`; 1.4 mode keeps `footer-<field>-mismatch`."""
        prefix = "" if self.version == "1.5" else "footer-"
        self._add(f"{prefix}{field}-mismatch", message, line)

    def _check_footer_fields(self, footer: Footer, line: int | None) -> None:
        expectation, tag = self.expectation, self.used_tag
        version = footer_version(self.version)
        if footer.version is not None and footer.version != version:
            self._mismatch("version", f"Expected Version={version}.", line)
        index = expectation.tag_index(tag)
        index_wrong = footer.index is not None and footer.index != index
        if footer.tag is not None and (footer.tag != tag or index_wrong):
            # Both versions: the 1.5 reference runtime names the footer's Tag field apart
            # from the wrapper's `tag-mismatch`, so a wrong reply tag reports both.
            self._add("footer-tag-mismatch", f"Expected Tag={tag}_{index}.", line)
        if footer.cycle is not None and footer.cycle not in expectation.cycles:
            self._mismatch("cycle", f"Expected Cycle={expectation.cycle}/3.", line)
        if self.version == "1.5" and footer.locus is not None and footer.locus != expectation.locus:
            self._mismatch("locus", f"Expected Locus={expectation.locus}.", line)
        declared = expectation.command.assumptions
        if (
            declared is not None
            and footer.assumptions is not None
            and footer.assumptions != declared
        ):
            self._add(
                "footer-assumptions-mismatch",
                f"The command declared --assumptions={declared}; expected Assumptions={declared}.",
                line,
            )

    def _check_body(self) -> None:
        body_lines = self.reply.body_lines()
        for number, text in body_lines:
            if _NESTED_HEADER.match(text.strip()):
                self._add(
                    "nested-header", f"Body line repeats the wrapper tag {text.strip()}.", number
                )
            elif _NESTED_FOOTER.match(text.strip()):
                self._add("nested-footer", "Body contains a second footer line.", number)
        body, first_line = self.reply.body, self.reply.body_start
        if self.version == "1.5" and not body.strip():
            self._add("empty-body", "The reply body must not be empty.", first_line)
        if self.expectation.escape_due and not has_escape_options(body):
            self._add(
                "missing-escape-options",
                "After three unresolved cycles the reply must offer both `!<e> --<tag>` and "
                "`!<e_o>`.",
                first_line,
            )
        if self.expectation.recovery_body is not None:
            self._check_recovery(body, first_line)
        elif self.version == "1.4":
            self._check_1_4_contracts(body, first_line)

    def _check_recovery(self, body: str, line: int) -> None:
        if self.version == "1.5":
            if body.strip() != self.expectation.recovery_body:
                self._add(
                    "recovery-body-mismatch",
                    f"Invalid commands require the deterministic recovery body: "
                    f"{self.expectation.recovery_body}",
                    line,
                )
        elif not is_recovery_body_1_4(body):
            self._add(
                "recovery-body-invalid",
                "An invalid command gets <c> with a one-line error and a minimal valid "
                "first-line example, and no other content.",
                line,
            )

    def _check_1_4_contracts(self, body: str, line: int) -> None:
        questions = len(_QUESTION_END.findall(body))
        if self.used_tag == "c" and questions > QUESTION_LIMIT:
            self._add(
                "too-many-questions",
                f"A <c> reply may ask at most {QUESTION_LIMIT} questions; found {questions}.",
                line,
            )
        if self.expectation.command.tag == "e_o" and "assumption" not in body.lower():
            self._add(
                "assumptions-not-listed",
                "A reply to !<e_o> must list its assumptions explicitly.",
                line,
            )


def _is_nested_wrapper(text: str) -> bool:
    stripped = text.strip()
    return bool(_NESTED_HEADER.match(stripped) or _NESTED_FOOTER.match(stripped))


def has_escape_options(body: str) -> bool:
    """Whether `body` offers both escape forms."""
    return "!<e> --<" in body and "!<e_o>" in body


def is_recovery_body_1_4(body: str) -> bool:
    """One non-empty line that shows at least one valid command as its example."""
    text = body.strip()
    if not text or "\n" in text:
        return False
    return any(parse_command(found, "1.4").ok for found in _EXAMPLE_COMMAND.findall(text))


def format_reply(
    expectation: Expectation,
    body: str,
    *,
    tag: str | None = None,
    sources: str = "none",
    assumptions: int | None = None,
    locus: str | None = None,
) -> str:
    """Wrap `body` as a compliant reply: tag line, body, footer.

    The protocol's own text takes over where it is fixed: an invalid command gets its
    recovery body (in 1.4 unless `body` already is a one-line recovery), and the
    escape choices are appended when due. `tag` picks among `reply_tags` (1.4's
    `!<o> --incorrect`); `locus` names the locus in 1.4, where names are free-form.
    """
    tag = tag or expectation.reply_tag
    if tag not in expectation.reply_tags:
        raise ValueError(f"<{tag}> is not a valid reply here; expected {expectation.reply_tags}")
    recovery = expectation.recovery_body
    keeps_own_recovery = expectation.version == "1.4" and is_recovery_body_1_4(body)
    if recovery is not None and not keeps_own_recovery:
        body = recovery
    body = trim_blank_lines(body.split("\n"))
    if expectation.escape_due and not has_escape_options(body):
        body = f"{body}\n\n{ESCAPE_HINTS[expectation.version]}".strip()
    declared = expectation.command.assumptions
    footer_line = build_footer(
        tag,
        expectation.tag_index(tag),
        cycle=expectation.cycle,
        locus=expectation.next_state(tag, locus).locus,
        sources=sources,
        assumptions=declared if declared is not None else assumptions or 0,
        version=expectation.version,
    )
    return f"<{tag}>\n{body}\n{footer_line}" if body.strip() else f"<{tag}>\n{footer_line}"


def _repair(expectation: Expectation, reply: Reply, tag: str) -> str:
    footer = reply.footer
    lines = [text for _, text in reply.body_lines()]
    filled = [n for n, text in enumerate(lines) if text.strip()]
    if footer is None and filled:  # a footer run onto the last line of text: split it off
        last = lines[filled[-1]]
        at = last.find("[Version=")
        if at > 0 and looks_like_footer(last[at:]):
            footer = parse_footer(last[at:], expectation.version)
            lines[filled[-1]] = last[:at].rstrip()
    if reply.header and reply.header.rest.strip():
        lines.insert(0, reply.header.rest.strip())
    body = "\n".join(part for part in (trim_blank_lines(lines), reply.trailing) if part)
    # A repeated wrapper tag or footer inside the body is framing, not content: keeping it
    # would leave a nested-header/nested-footer violation in the repaired reply.
    kept = [text for text in body.split("\n") if not _is_nested_wrapper(text)]
    body = trim_blank_lines(kept)
    if expectation.version == "1.5" and not body.strip():
        body = STRUCTURAL_BODY
    return format_reply(
        expectation,
        body,
        tag=tag,
        sources=footer.sources if footer and footer.sources in SOURCES else "none",
        assumptions=footer.assumptions if footer else None,
        locus=footer.locus if footer else None,
    )
