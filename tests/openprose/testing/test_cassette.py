"""A strict replay: recorded answers served; a request not recorded gives a readable diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.providers.base import Message, ModelRequest, ModelResponse, ProviderError
from openprose.testing.cassette import CassetteProvider, request_text


def _request(
    prompt: str, model: str = "sonnet", system: str | None = "You review code"
) -> ModelRequest:
    return ModelRequest(model=model, messages=(Message("user", prompt),), system=system)


RECORDS = [
    (_request("Read the code in src/\nand find bugs"), ModelResponse("two bugs")),
    (_request("Suggest fixes"), ModelResponse("fix them")),
]


async def test_recorded_requests_are_answered_whatever_the_model_id() -> None:
    cassette = CassetteProvider(list(RECORDS), source=Path("c.jsonl"))
    answer = await cassette.complete(_request("Suggest fixes", model="claude-sonnet-4-5"))
    assert answer.text == "fix them" and answer.provider == "replay"
    assert cassette.unused == 1 and cassette.mismatch is None
    await cassette.complete(_request("Read the code in src/\nand find bugs"))
    assert cassette.unused == 0


async def test_a_changed_prompt_fails_with_a_diff_from_the_nearest_recorded_request() -> None:
    cassette = CassetteProvider(list(RECORDS), source=Path("cassettes/review.jsonl"))
    with pytest.raises(ProviderError, match="holds no answer for this request"):
        await cassette.complete(_request("Read the code in lib/\nand find bugs"))
    assert cassette.mismatch is not None
    assert cassette.mismatch.splitlines() == (
        [
            "--- recorded (review.jsonl)",
            "+++ sent now",
            "@@ -1,3 +1,3 @@",
            " system: You review code",
            "-user: Read the code in src/",
            "+user: Read the code in lib/",
            " user: and find bugs",
        ]
    )


async def test_one_request_too_many_is_shown_whole() -> None:
    cassette = CassetteProvider(list(RECORDS[:1]), source=Path("c.jsonl"))
    await cassette.complete(RECORDS[0][0])
    with pytest.raises(ProviderError):
        await cassette.complete(_request("Suggest fixes"))
    assert cassette.mismatch is not None
    assert cassette.mismatch.splitlines()[0] == (
        "the cassette holds no more requests; the run sent one more:"
    )
    assert "user: Suggest fixes" in cassette.mismatch


def test_request_text_shows_tools_and_tool_traffic() -> None:
    from openprose.providers.base import ToolCall, ToolResult, ToolSpec

    request = ModelRequest(
        model="m",
        messages=(
            Message("user", "go"),
            Message("assistant", "", tool_calls=(ToolCall("1", "read_file", {"path": "a"}),)),
            Message("user", "", tool_results=(ToolResult("1", "text of a"),)),
        ),
        tools=(ToolSpec("read_file", "", {}), ToolSpec("list_files", "", {})),
    )
    assert request_text(request) == [
        "user: go",
        "assistant:",
        "assistant calls read_file {'path': 'a'}",
        "user:",
        "user result: text of a",
        "tools: list_files, read_file",
    ]


async def test_folders_of_the_recording_machine_are_masked_so_a_copy_replays(
    tmp_path: Path,
) -> None:
    from openprose.testing.cassette import PathMask, save_masked

    here = PathMask(Path("/work/a/examples"), Path("/tmp/case-1"))
    recorded = tmp_path / "recorded.jsonl"
    request = _request("Read /work/a/examples/skills/x.md and /tmp/case-1/out.txt")
    recorded.write_text(
        json.dumps({"request": request.to_dict(), "response": {"text": "ok"}}) + "\n"
    )
    cassette = tmp_path / "cassettes" / "c.jsonl"
    save_masked(recorded, cassette, here)
    saved = json.loads(cassette.read_text())
    assert saved["request"]["messages"][0]["content"] == (
        "Read $PROGRAM_DIR/skills/x.md and $CASE_DIR/out.txt"
    )
    elsewhere = PathMask(Path("/home/ci/repo/examples"), Path("/tmp/case-2"))
    replay = CassetteProvider.from_file(cassette, elsewhere)
    moved = _request("Read /home/ci/repo/examples/skills/x.md and /tmp/case-2/out.txt")
    assert (await replay.complete(moved)).text == "ok"
