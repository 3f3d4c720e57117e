"""The key that signs approval answers, and the digests an answer is bound to.

An answer a resume honours carries an HMAC made with a per-user key kept outside every
project (`$XDG_STATE_HOME/openprose/approval.key`, else `~/.local/state/openprose/`, mode
0600). Only `prose approve`/`deny`, the web view and the API — the user's own processes —
read it; the sandbox never mounts that folder and the file tools refuse it, so a line an
agent appends to a journal cannot carry a valid seal. A seal covers the run, the request
id, the kind, the digest of the exact action (tool and every argument) and the answer.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "KeyUnavailable",
    "action_digest",
    "answer_problem",
    "approval_key",
    "grant_problem",
    "in_folder",
    "key_folder",
    "key_folder_within",
    "question_digest",
    "real_key_folder",
    "reply_problem",
    "seal_answer",
    "seal_grant",
    "seal_reply",
    "seals_match",
]

KEY_FILE = "approval.key"
KEY_BYTES = 32
SEAL_VERSION = "openprose-approval/1"


class KeyUnavailable(Exception):
    """The approval key cannot be made or read; the message names the file and the fix."""


def key_folder() -> Path:
    """Where the key lives: `$XDG_STATE_HOME/openprose` (an absolute one), else
    `~/.local/state/openprose` — never inside a project."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "openprose"


def real_key_folder() -> Path:
    """`key_folder()` with links resolved: what path checks compare against (resolved once
    per place: every file a listing walks is checked)."""
    return _resolved(os.environ.get("XDG_STATE_HOME", ""), os.environ.get("HOME", ""))


@lru_cache(maxsize=8)
def _resolved(state: str, home: str) -> Path:
    # Keyed by the variables key_folder reads: a test (or a caller) that changes them
    # gets the new folder.
    return Path(os.path.realpath(key_folder()))


def in_folder(path: Path, folder: str) -> bool:
    """Is `path` (resolved) `folder` or inside it? Asked for every path a file tool judges,
    so compared as text (`Path.is_relative_to` raises and catches internally)."""
    text = str(path)
    return text.startswith(folder) and (len(text) == len(folder) or text[len(folder)] == "/")


def key_folder_within(roots: tuple[Path, ...]) -> tuple[Path, ...]:
    """The key folder, when it lies inside one of `roots` (folders a sandbox mounts): the
    sandbox must hide it there. Empty otherwise (a mount outside them is not seen)."""
    real = real_key_folder()
    return (real,) if any(real.is_relative_to(root) for root in roots) else ()


_keys: dict[Path, bytes] = {}


def approval_key() -> bytes:
    """The user's key, made on first use (read once per process)."""
    path = key_folder() / KEY_FILE
    cached = _keys.get(path)
    if cached is None:
        cached = _keys[path] = _load_or_make(path)
    return cached


def _load_or_make(path: Path) -> bytes:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            _make(path)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise KeyUnavailable(
            f"cannot make or open the approval key {path}: {error.strerror or error}"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise KeyUnavailable(f"{path} is not a file of yours; remove it (a new key is made)")
        if info.st_mode & 0o077:
            raise KeyUnavailable(
                f"{path} can be read by others (mode {info.st_mode & 0o777:o}); "
                f"`chmod 600 {path}` or remove it"
            )
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise KeyUnavailable(f"{path} is damaged ({len(key)} bytes); remove it (a new key is made)")
    return key


def _make(path: Path) -> None:
    # Written whole under another name, then linked into place: a concurrent first use
    # never reads a half-written key, and the first link wins.
    staging = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(staging, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(staging)


def action_digest(tool: str, kind: str, action: str, arguments: Any) -> str:
    """SHA-256 of the canonical action: the tool, the kind, the action and every argument
    (keys sorted), so an answer cannot be moved to a call that differs in any of them."""
    canonical = orjson.dumps(
        {"tool": tool, "kind": kind, "action": action, "arguments": arguments},
        option=orjson.OPT_SORT_KEYS,
        default=repr,
    )
    return hashlib.sha256(canonical).hexdigest()


def _seal(key: bytes, *parts: str) -> str:
    return hmac.new(key, orjson.dumps([SEAL_VERSION, *parts]), hashlib.sha256).hexdigest()


def seal_answer(
    key: bytes,
    run_id: str,
    request_id: str,
    tool: str,
    kind: str,
    action: str,
    digest: str,
    answer: str,
    by: str,
) -> str:
    """The seal of one answer (`approval_decided`): every field a resume acts on."""
    return _seal(key, "answer", run_id, request_id, tool, kind, action, digest, answer, by)


def seal_grant(key: bytes, run_id: str, kind: str, action: str) -> str:
    """The seal of an "allow for this run" given on the terminal (a `permission` event)."""
    return _seal(key, "grant", run_id, kind, action)


def seal_reply(
    key: bytes,
    run_id: str,
    question_id: str,
    digest: str,
    answer: str,
    by: str,
    user: str,
    t: float,
) -> str:
    """The seal of a person's answer to an `ask` (`question_answered`): the run, the
    question and its exact wording, the answer, who gave it, through what and when."""
    return _seal(key, "reply", run_id, question_id, digest, answer, by, user, repr(float(t)))


def seals_match(expected: str, given: object) -> bool:
    return isinstance(given, str) and hmac.compare_digest(expected, given)


ANSWERS = ("once", "run", "deny")
UNSEALED = "it has no seal: not written by prose approve/deny, the web view or the API"
BROKEN_SEAL = "its seal does not hold: written for another run, or altered"


def answer_problem(event: Mapping[str, Any], run_id: str, key: bytes) -> str:
    """Why a journaled answer (`approval_decided`) must not be used, or "" when its seal
    holds for `run_id`."""
    if "seal" not in event:
        return UNSEALED
    answer = str(event.get("answer"))
    expected = seal_answer(
        key,
        run_id,
        str(event.get("id")),
        str(event.get("tool")),
        str(event.get("kind")),
        str(event.get("action")),
        str(event.get("digest") or ""),
        answer,
        str(event.get("by") or ""),
    )
    if answer not in ANSWERS or not seals_match(expected, event.get("seal")):
        return BROKEN_SEAL
    return ""


def grant_problem(event: Mapping[str, Any], run_id: str, key: bytes) -> str:
    """Why a journaled "allow for this run" must not be used, or "" when its seal holds."""
    if "seal" not in event:
        return UNSEALED
    expected = seal_grant(key, run_id, str(event.get("kind")), str(event.get("action")))
    return "" if seals_match(expected, event.get("seal")) else BROKEN_SEAL


# Who may have answered an `ask`: the channels a `question_answered` event names in `by`
# (`test`: a `prose test` case's `answers`).
CHANNELS = ("cli", "ui", "api", "terminal", "timeout", "test")


def question_digest(text: str, options: tuple[str, ...] | list[str], default: str | None) -> str:
    """SHA-256 of a question's wording, options and default: an answer holds only for the
    question it answered."""
    return hashlib.sha256(orjson.dumps([text, list(options), default])).hexdigest()


def reply_problem(event: Mapping[str, Any], question_id: str, digest: str, run_id: str) -> str:
    """Why a journaled answer (`question_answered`) must not be used for the question
    `question_id` whose wording has `digest`, or "" when it may."""
    if "seal" not in event:
        return UNSEALED
    try:
        key = approval_key()
    except KeyUnavailable as error:
        return str(error)
    answer, by = event.get("answer"), str(event.get("by") or "")
    answered = event.get("answered")
    if not isinstance(answer, str) or not isinstance(answered, int | float) or by not in CHANNELS:
        return BROKEN_SEAL
    user, answered_digest = str(event.get("user") or ""), str(event.get("digest"))
    expected = seal_reply(key, run_id, question_id, answered_digest, answer, by, user, answered)
    if not seals_match(expected, event.get("seal")):
        return BROKEN_SEAL
    if event.get("digest") != digest:
        return "it answers another wording of the question; asked again"
    return ""
