"""Where a statement runs: its scope, its thread's history and its block frame."""

from __future__ import annotations

from dataclasses import dataclass

from openprose.vm.errors import ProseError
from openprose.vm.prompts import History
from openprose.vm.scope import Scope


@dataclass(slots=True)
class Ctx:
    scope: Scope
    history: History
    depth: int = 0
    execution_id: int = 0
    in_pipeline: bool = False
    caught: ProseError | None = None

    def with_scope(self, scope: Scope) -> Ctx:
        return Ctx(
            scope, self.history, self.depth, self.execution_id, self.in_pipeline, self.caught
        )

    def forked(self, scope: Scope | None = None) -> Ctx:
        return Ctx(
            scope or self.scope,
            self.history.fork(),
            self.depth,
            self.execution_id,
            self.in_pipeline,
            self.caught,
        )
