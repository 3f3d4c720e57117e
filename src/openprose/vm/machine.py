"""What the statement modules (`loops`, `parallel`, `pipelines`, `programs`) need from the
interpreter running them: to run nested statements, and the run's shared parts. A protocol,
so those modules never import the interpreter (which imports them)."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Protocol

from openprose import nodes as n
from openprose.record.runstore import RunStore
from openprose.vm.bindings import Bindings
from openprose.vm.expressions import Expressions
from openprose.vm.frame import Ctx
from openprose.vm.judge import Judge
from openprose.vm.runtime import LoadedProgram, Shared, VMConfig
from openprose.vm.sessions import Sessions
from openprose.vm.values import Value


class Program(Protocol):
    async def run(self) -> dict[str, Value]: ...


class Machine(Protocol):
    shared: Shared
    config: VMConfig
    store: RunStore
    imports: dict[str, LoadedProgram]
    outputs: dict[str, Value]
    expressions: Expressions
    bindings: Bindings
    sessions: Sessions
    judge: Judge

    def body(self, body: tuple[n.Stmt, ...], ctx: Ctx, prefix: str) -> Awaitable[Value]: ...

    def stmt(self, stmt: Any, ctx: Ctx, step: str) -> Awaitable[Value]: ...

    async def eval(self, expr: Any, ctx: Ctx, step: str, name: str | None = None) -> Value: ...

    def spawn(
        self, loaded: LoadedProgram, store: RunStore, inputs: Mapping[str, Value], prefix: str
    ) -> Program:
        """An interpreter for an invoked program, sharing this run."""
        ...
