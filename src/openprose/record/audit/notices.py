"""The trail's rows for the evaluator's judgments (`decision`, `decision_failed`) and for
the events said as a notice in the VM's words (`NOTICES`: a mixin of `Translator`, kept apart
to keep modules short)."""

from __future__ import annotations

from typing import Any

from openprose.record import events as ev
from openprose.record.audit.messages import EVALUATOR, UNSTATED, VM
from openprose.record.codec import fields_of
from openprose.record.events import Event

# The events that become a notice in the VM's words (`Translator.warning`).
NOTICES = frozenset(
    (
        ev.MemoryUpdated,
        ev.ErrorCaught,
        ev.RaceDecided,
        ev.UnboundPlaceholder,
        ev.PromptOverBudget,
        ev.ContextTrimmed,
        ev.ContextWindowed,
        ev.SkillLoaded,
        ev.SkillMissing,
        ev.ApprovalIgnored,  # a recorded answer whose seal did not hold (forged, another run's)
        ev.QuestionIgnored,  # the same, for an answer to an `ask`
        ev.QuestionExpired,  # an `ask` with no default nobody answered in time
        ev.TypedInvalid,  # a typed answer that did not match its shape: asked again
        ev.TypedFailed,  # ...and the answer asked again did not either: the session fails
    )
)


class NoticeRows:
    """Judgment and notice rows: a judgment refers to the evaluator's answer it read."""

    def say(
        self, kind: str, t: float, *, sender: str, content: str, confidence: float, **fields: Any
    ) -> str:
        raise NotImplementedError  # `Translator.say`

    def _answer_id(self, step: str) -> str | None:
        raise NotImplementedError  # `Translator._answer_id`

    def decision(self, event: ev.Decision, t: float) -> None:
        step, attempts = event.step, event.attempts
        answer = self._answer_id(f"{step}~{attempts}") if attempts else None
        kind, question = event.kind, event.question
        verdict, reason = event.verdict, event.reason
        shown = "true" if verdict is True else "false" if verdict is False else verdict
        subject = f" **{question}**" if question else ""
        self.say(
            "claim",
            t,
            sender=EVALUATOR if answer else VM,
            receiver=VM if answer else None,
            content=f"{kind}{subject} -> {shown}: {reason}",
            confidence=UNSTATED if answer else 1.0,
            provenance=[f"step:{step}"],
            refers_to=answer,
            payload={"step": step, "kind": kind, "verdict": verdict, "reason": reason},
        )

    def decision_failed(self, event: ev.DecisionFailed, t: float) -> None:
        step = event.step
        self.say(
            "notice",
            t,
            sender=VM,
            content=(
                f"the evaluator gave no usable {event.kind} answer for "
                f"**{event.question}** (asked twice)"
            ),
            confidence=1.0,
            provenance=[f"step:{step}"],
            refers_to=self._answer_id(f"{step}~2"),
            payload={"step": step, "kind": event.kind},
        )

    def warning(self, event: Event, t: float) -> None:
        """Something that changed what a model saw or how the run went, in the VM's words."""
        step, kind, details = event.step, event.ev, fields_of(event)
        shown = ", ".join(f"{k}={v}" for k, v in details.items())
        self.say(
            "notice",
            t,
            sender=VM,
            content=f"{kind.replace('_', ' ')} at step {step}" + (f": {shown}" if shown else ""),
            confidence=1.0,
            provenance=[f"step:{step}"],
            topic=kind,
            payload={"step": step, **details},
        )
