"""A program's contract: every `input` and `output` it declares, wherever it is written."""

from __future__ import annotations

import pytest

from openprose.contracts import contract_of
from openprose.parser import parse_text


def _contract(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    result = parse_text(text)
    assert result.diagnostics == ()
    contract = contract_of(result.program)
    return contract.inputs, contract.outputs


@pytest.mark.parametrize(
    "text",
    [
        # a pipeline stage as a binding's value, and as a statement of its own
        'let xs = ["a"]\nlet ys = xs | map:\n  output summary = session "Sum {item}"\n',
        'let xs = ["a"]\nxs | map:\n  output summary = session "Sum {item}"\n',
        # a pipeline as an output's value; a `do:` inside a parallel branch
        'let xs = ["a"]\noutput all = xs | map:\n  output summary = session "Sum {item}"\n',
        'parallel:\n  a = do:\n    output summary = session "x"\n',
    ],
)
def test_an_output_in_any_body_is_in_the_contract(text: str) -> None:
    assert "summary" in _contract(text)[1]


def test_inputs_and_outputs_come_in_source_order_once_each() -> None:
    text = (
        'input topic: "what"\ninput depth: "how deep"\n'
        'if **deep**:\n  output report = session "a"\nelse:\n  output report = session "b"\n'
        'output notes = session "c"\n'
    )
    assert _contract(text) == (("topic", "depth"), ("report", "notes"))
