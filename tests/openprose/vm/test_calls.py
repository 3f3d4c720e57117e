"""A model call's journal lines, byte for byte: the events `vm/calls` builds through their
factories (`new_session_started`, `new_session_finished`) are written as the classes'
`__init__` built them before (rec30h), a failed attempt included."""

from __future__ import annotations

import re

from tests.openprose.vm.conftest import VM

PROGRAM = """agent writer:
  model: sonnet
  prompt: "You write."

let draft = session: writer
  prompt: "Write a line"
  retry: 1
"""
REQUEST = (
    b'{"model":"sonnet","messages":[{"role":"user","content":"Write a line"}],'
    b'"system":"You write.","max_tokens":1024,"temperature":null}'
)
EXPECTED = [
    (
        b'{"ev":"session_started","step":"2","t":T,"agent":"writer","model":"sonnet",'
        b'"binding":"draft","kind":"session"}'
    ),
    (
        b'{"ev":"session_failed","step":"2","t":T,"attempt":1,'
        b'"error":"scripted: injected error failure for rule \'\'","status":400,"elapsed":T,'
        b'"retried":true,"request":' + REQUEST + b"}"
    ),
    (
        b'{"ev":"session_finished","step":"2","t":T,"request":' + REQUEST + b","
        b'"response":{"text":"a line","usage":{"input_tokens":6,"output_tokens":2},'
        b'"finish_reason":"stop","request_id":"scripted-2","model":"sonnet","provider":"scripted"},'
        b'"agent":"writer","model":"sonnet","binding":"draft","attempt":2,"elapsed":T,'
        b'"kind":"session"}'
    ),
]


def test_a_calls_journal_lines_keep_their_bytes(vm: VM) -> None:
    result = vm.run(PROGRAM, vm.spy([{"answer": "a line", "failures": ("error",)}]))
    assert result.status == "succeeded"
    lines = (result.run_dir / "journal.jsonl").read_bytes().splitlines()
    timeless = [re.sub(rb'"(t|elapsed)":[0-9.e-]+', rb'"\1":T', line) for line in lines]
    assert timeless[2:-1] == EXPECTED
