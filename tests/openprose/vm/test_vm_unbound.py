"""A name bound only in a body that did not run reaches a session as a journaled placeholder."""

from __future__ import annotations

from typing import Any

SOURCE = """if **the sky is green**:
  let x = session "Paint it"
session "Describe {x}"
session "Again"
  context: x
"""


def test_a_session_gets_a_placeholder_for_a_name_its_branch_never_bound(vm: Any) -> None:
    provider = vm.spy(vm.verdicts(("sky is green", False)))
    result = vm.run(SOURCE, provider)
    assert result.status == "succeeded", result.error
    assert provider.sent("^Paint") == []
    note = "(x is unbound: the statement that binds it did not run)"
    assert provider.sent("^Describe")[0].last_user_text().startswith(f"Describe {note}")
    assert f"### x\n{note}" in provider.sent("^Again")[0].last_user_text()
    events = vm.events(result, "unbound_placeholder")
    assert [(e["step"], e["name"]) for e in events] == [("2", "x"), ("3", "x")]
    assert "x: unbound (placeholder)" in (result.run_dir / "state.md").read_text()


def test_the_branch_taken_binds_the_real_answer(vm: Any) -> None:
    provider = vm.spy(
        [*vm.verdicts(("sky is green", True)), {"match": "^Paint", "answer": "green"}]
    )
    result = vm.run(SOURCE, provider)
    assert result.status == "succeeded", result.error
    assert provider.sent("^Describe")[0].last_user_text().startswith("Describe green")
    assert vm.events(result, "unbound_placeholder") == []


def test_a_name_no_statement_binds_is_still_an_error(vm: Any) -> None:
    # The checker refuses this program (E142); the VM, run directly, still says so.
    result = vm.run('session "A"\n  context: nowhere\n', vm.spy())
    assert result.status == "failed" and "undefined variable 'nowhere'" in (result.error or "")


def test_a_field_of_an_unbound_name_gets_the_placeholder_too(vm: Any) -> None:
    source = """if **the sky is green**:
  let x = session "Paint it"
session "Again"
  context: x.colour
"""
    provider = vm.spy(vm.verdicts(("sky is green", False)))
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    text = provider.sent("^Again")[0].last_user_text()
    assert "### x.colour\n(x is unbound: the statement that binds it did not run)" in text
