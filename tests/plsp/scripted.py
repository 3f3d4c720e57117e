"""A scripted model for loop tests: answers from a list and records what it was asked."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ScriptedModel:
    replies: list[str]
    prompts: list[tuple[str, str]] = field(default_factory=list)

    async def __call__(self, system: str, prompt: str) -> str:
        self.prompts.append((system, prompt))
        if not self.replies:
            raise AssertionError(f"unexpected model call with prompt {prompt!r}")
        return self.replies.pop(0)
