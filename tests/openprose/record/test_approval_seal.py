"""The approval key (made once, 0600, refused when others can read it) and what a seal and
an action digest bind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from openprose.record import approval_seal
from openprose.record.approval_seal import (
    KeyUnavailable,
    action_digest,
    approval_key,
    key_folder,
    seal_answer,
    seal_grant,
    seals_match,
)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(approval_seal, "_keys", {})
    return tmp_path / "state" / "openprose"


def test_the_key_is_made_once_private_and_outside_the_project(state: Path) -> None:
    key = approval_key()
    path = state / "approval.key"
    assert key_folder() == state
    assert len(key) == 32 and path.read_bytes() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    approval_seal._keys.clear()
    assert approval_key() == key  # read back, not made again
    assert [p.name for p in state.iterdir()] == ["approval.key"]  # no staging file left


def test_without_xdg_state_home_the_key_is_under_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert key_folder() == tmp_path / ".local" / "state" / "openprose"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # not absolute: ignored
    assert key_folder() == tmp_path / ".local" / "state" / "openprose"


def test_a_key_others_can_read_is_refused_with_the_fix(state: Path) -> None:
    approval_key()
    path = state / "approval.key"
    path.chmod(0o644)
    approval_seal._keys.clear()
    with pytest.raises(KeyUnavailable, match=r"can be read by others.*chmod 600"):
        approval_key()


def test_a_damaged_or_linked_key_is_refused(state: Path, tmp_path: Path) -> None:
    state.mkdir(parents=True)
    path = state / "approval.key"
    path.write_bytes(b"short")
    path.chmod(0o600)
    with pytest.raises(KeyUnavailable, match="damaged"):
        approval_key()
    path.unlink()
    elsewhere = tmp_path / "planted"
    elsewhere.write_bytes(b"k" * 32)
    elsewhere.chmod(0o600)
    os.symlink(elsewhere, path)
    with pytest.raises(KeyUnavailable, match="cannot make or open"):
        approval_key()


def test_an_unwritable_state_folder_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    monkeypatch.setattr(approval_seal, "_keys", {})
    with pytest.raises(KeyUnavailable, match=str(blocker)):
        approval_key()


def test_the_digest_changes_with_every_part_of_the_action() -> None:
    base = action_digest("write_file", "write", "notes.md", {"path": "notes.md", "content": "a"})
    assert base == action_digest(
        "write_file", "write", "notes.md", {"content": "a", "path": "notes.md"}
    )  # key order does not matter
    assert base != action_digest(
        "write_file", "write", "notes.md", {"path": "notes.md", "content": "b"}
    )
    assert base != action_digest(
        "edit_file", "write", "notes.md", {"path": "notes.md", "content": "a"}
    )
    assert base != action_digest(
        "write_file", "read", "notes.md", {"path": "notes.md", "content": "a"}
    )
    assert base != action_digest(
        "write_file", "write", "other.md", {"path": "notes.md", "content": "a"}
    )


def test_a_seal_binds_every_field() -> None:
    key = b"k" * 32
    fields = ["run-1", "3~t0.0:bash", "run_command", "bash", "ls", "d" * 64, "once", "cli"]
    sealed = seal_answer(key, *fields)
    assert seals_match(sealed, seal_answer(key, *fields))
    for index in range(len(fields)):
        changed = list(fields)
        changed[index] += "x"
        assert not seals_match(sealed, seal_answer(key, *changed)), fields[index]
    assert not seals_match(sealed, seal_answer(b"j" * 32, *fields))
    assert not seals_match(sealed, None)
    assert seal_grant(key, "run-1", "bash", "ls") != seal_grant(key, "run-2", "bash", "ls")
