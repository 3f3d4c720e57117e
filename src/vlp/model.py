"""A typed (pydantic) view of VLP messages for code that prefers objects to dicts.

Validation is delegated to the same validator as everything else, and models are frozen
(a message is a receipt), so a model can only hold a message that ``validate_vlp``
accepts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from vlp.errors import VLPError
from vlp.message import make_message
from vlp.validate import message_problems

MessageType = Literal[
    "claim", "evidence", "query", "response", "correction", "notice", "session_context"
]
SafetyLevel = Literal["safe", "review", "block"]


class SafetyIssue(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    code: str
    detail: str | None = None


class Safety(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    level: SafetyLevel
    issues: list[SafetyIssue] | None = None
    requires_human: bool | None = None


class ProvenanceRef(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    ref: str
    type: str | None = None
    hash: str | None = None
    fetched_at: str | None = None


class Message(BaseModel):
    """One VLP/1.1 message. Unknown top-level fields are kept (forward compatibility)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    protocol: Literal["VLP/1.1"]
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
        # The wire form exactly: null is a wrong type, not "absent"; "extras" is an unknown
        # field (kept as it is), not _extras.
        if isinstance(data, dict):
            problems = message_problems(data)
            if problems:
                raise ValueError(str(VLPError(problems)))
        return data

    @field_validator("seq", mode="before")
    @classmethod
    def _integral_seq(cls, value: Any) -> Any:
        # JSON Schema counts 1e300 as an integer; pydantic's int would refuse it as too big.
        return int(value) if isinstance(value, float) and value.is_integer() else value

    @classmethod
    def create(cls, type: str, **fields: Any) -> Message:
        """Like :func:`vlp.make_message`, returning a model."""
        return cls.model_validate(make_message(type, **fields))

    @classmethod
    def from_dict(cls, msg: dict[str, Any]) -> Message:
        return cls.model_validate(msg)

    def to_dict(self) -> dict[str, Any]:
        """The wire form, exactly the fields given: ``_extras`` under its own name, absent
        optional fields left out, unknown fields kept (null ones too)."""
        wire = self.model_dump(by_alias=True, exclude_unset=True, mode="json")
        if wire.get("_extras", {}) is None:
            # pydantic counts an unknown wire field "extras" as setting this field; a valid
            # message never has _extras null, so null here means "not given".
            del wire["_extras"]
        return wire

    @property
    def safety_level(self) -> SafetyLevel:
        return "safe" if self.safety is None else self.safety.level
