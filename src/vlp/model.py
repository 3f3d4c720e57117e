"""A typed (pydantic) view of VLP messages for code that prefers objects to dicts.

Validation is delegated to the same validator as everything else, so a model can only
hold a message that ``validate_vlp`` accepts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vlp.errors import VLPError
from vlp.message import make_message
from vlp.validate import message_problems

MessageType = Literal[
    "claim", "evidence", "query", "response", "correction", "notice", "session_context"
]
SafetyLevel = Literal["safe", "review", "block"]


class SafetyIssue(BaseModel):
    model_config = ConfigDict(extra="allow")

    code: str
    detail: str | None = None


class Safety(BaseModel):
    model_config = ConfigDict(extra="allow")

    level: SafetyLevel
    issues: list[SafetyIssue] = Field(default_factory=list)
    requires_human: bool | None = None


class ProvenanceRef(BaseModel):
    model_config = ConfigDict(extra="allow")

    ref: str
    type: str | None = None
    hash: str | None = None
    fetched_at: str | None = None


class Message(BaseModel):
    """One VLP/1.1 message. Unknown top-level fields are kept (forward compatibility)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str
    protocol: Literal["VLP/1.1"] = "VLP/1.1"
    type: MessageType
    timestamp: str
    sender: str
    content: str | dict[str, Any]
    confidence: float
    session_id: str | None = None
    seq: int | None = None
    receiver: str | None = None
    topic: str | None = None
    payload: dict[str, Any] | None = None
    provenance: list[str | ProvenanceRef] | None = None
    keywords: list[str] | None = None
    constraints: list[str] | None = None
    safety: Safety | None = None
    refers_to: str | list[str] | None = None
    extras: dict[str, Any] | None = Field(default=None, alias="_extras")

    @model_validator(mode="before")
    @classmethod
    def _must_be_valid_vlp(cls, data: Any) -> Any:
        if isinstance(data, dict):
            wire = {("_extras" if key == "extras" else key): value for key, value in data.items()}
            wire = {key: value for key, value in wire.items() if value is not None}
            problems = message_problems(wire)
            if problems:
                raise ValueError(str(VLPError(problems)))
            return wire
        return data

    @classmethod
    def create(cls, type: str, **fields: Any) -> Message:
        """Like :func:`vlp.make_message`, returning a model."""
        return cls.model_validate(make_message(type, **fields))

    @classmethod
    def from_dict(cls, msg: dict[str, Any]) -> Message:
        return cls.model_validate(msg)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: ``_extras`` under its own name, unset optional fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @property
    def safety_level(self) -> SafetyLevel:
        return "safe" if self.safety is None else self.safety.level
