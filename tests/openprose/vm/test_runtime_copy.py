"""`ToolRuntime.for_one_run`: a run's copy keeps every field and has grants of its own."""

from __future__ import annotations

from dataclasses import fields

from openprose.vm.runtime import ToolRuntime


def test_every_field_is_copied_and_grants_are_the_run_own() -> None:
    # a distinct value in every field, so a field the copy forgets (one added later) shows
    original = ToolRuntime(
        approver=object(),  # type: ignore[arg-type]
        default_permissions={"write": "allow"},
        grants={("write", "notes.md")},
        sandbox_limits=object(),
        plan=True,
        seal_grant=lambda kind, action: f"{kind}:{action}",
        asker=object(),  # type: ignore[arg-type]
        run_id="run-1",
        mcp_servers={"docs": object()},
    )
    copy = original.for_one_run()
    for f in fields(ToolRuntime):
        if f.name == "grants":
            assert copy.grants == original.grants and copy.grants is not original.grants
        else:
            assert getattr(copy, f.name) is getattr(original, f.name), f.name
    copy.grants.add(("run", "make"))  # "allow for this run" in one run of a batch
    assert original.grants == {("write", "notes.md")}
