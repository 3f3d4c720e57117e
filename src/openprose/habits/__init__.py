"""Habits: syntax people bring from other languages, recognised with the fix that rewrites it.

The parser owns the grammar and decides where a habit may stand; this package tells what the
habit is and how to write it in OpenProse. Each function reads the parser's tokens through
``TokenView`` and returns the diagnostic (a value, with its fix) and, where the habit spans
tokens, the position after it; raising, recovery and the tree stay with the parser.
Decisions: docs/decisions.md, "Conformance (programs, session 13)" and "Programs as people
write them (session 14)".

One module per place a habit stands: ``statements``, ``sessions``, ``expressions``; ``view``
holds what they share. The parser imports the package and calls ``habits.<name>``.
"""

from __future__ import annotations

from openprose.habits.expressions import (
    data_object,
    missing_comma,
    operator_rewrite,
    plain_condition,
    range_loop,
    unparenthesised_argument,
)
from openprose.habits.sessions import (
    RETRY_RULE,
    agent_then_prompt,
    context_in_brackets,
    extra_times,
    header_colon,
    prompt_and_agent,
    unbracketed_list,
    unquoted_patterns,
    unquoted_prompt,
    yaml_block_text,
    yaml_dash_list,
)
from openprose.habits.statements import (
    CONTROL_WORDS,
    catch_without_as,
    colon_for_equals,
    control_word,
    else_if,
    except_clause,
    input_as_value,
    input_default,
    input_without_description,
    legacy_import,
    unindented_property,
    unquoted_description,
    unquoted_label,
)
from openprose.habits.view import (
    TokenView,
    plain_quote,
    quote,
)

__all__ = [
    "CONTROL_WORDS",
    "RETRY_RULE",
    "TokenView",
    "agent_then_prompt",
    "catch_without_as",
    "colon_for_equals",
    "context_in_brackets",
    "control_word",
    "data_object",
    "else_if",
    "except_clause",
    "extra_times",
    "header_colon",
    "input_as_value",
    "input_default",
    "input_without_description",
    "legacy_import",
    "missing_comma",
    "operator_rewrite",
    "plain_condition",
    "plain_quote",
    "prompt_and_agent",
    "quote",
    "range_loop",
    "unbracketed_list",
    "unindented_property",
    "unparenthesised_argument",
    "unquoted_description",
    "unquoted_label",
    "unquoted_patterns",
    "unquoted_prompt",
    "yaml_block_text",
    "yaml_dash_list",
]
