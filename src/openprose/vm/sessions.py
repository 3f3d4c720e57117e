"""Sessions: a task (with its agent's prompt, context and memory) sent to a model, and the
answer bound, recorded in the thread's history and, for persistent agents, remembered.

`Sessions.run` builds the request; `Sessions._ask` is where the session's model call happens
— the one place a tool loop plugs in (see docs/vm-layout.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprose import nodes as n
from openprose.providers.base import Message, ModelRequest, ModelResponse
from openprose.record import events as ev
from openprose.record.runstore import RunStore
from openprose.shapes import returns_of
from openprose.vm.agents import Memories
from openprose.vm.bindings import Bindings
from openprose.vm.calls import ModelCalls
from openprose.vm.context import Contexts
from openprose.vm.errors import ProseRuntimeError, SessionFailed
from openprose.vm.expressions import Expressions, literal
from openprose.vm.frame import Ctx
from openprose.vm.prompts import NO_TASK, user_message
from openprose.vm.runtime import AgentSpec, Shared
from openprose.vm.typed import RETRY_SUFFIX, Typed, typed_of
from openprose.vm.values import Value

if TYPE_CHECKING:
    from openprose.telemetry.spans import StatementSpan
    from openprose.vm.memory import AgentMemory
    from openprose.vm.tools.skills import Skill
    from openprose.vm.tools.toolbox import Toolbox

_BACKOFFS = ("none", "linear", "exponential")


@dataclass(slots=True)
class _Plan:
    node: n.Session  # kept: its id is the key, so it must stay alive
    props: dict[str, Any]
    agent: AgentSpec | None
    model: str
    retry: tuple[int, str] | None = None  # checked where it is used, then kept
    typed: Typed | None = None  # the shape of its answer, when it declares one


class Sessions:
    def __init__(
        self,
        shared: Shared,
        store: RunStore,
        *,
        expressions: Expressions,
        contexts: Contexts,
        calls: ModelCalls,
        memories: Memories,
        bindings: Bindings,
        agents: Mapping[str, AgentSpec],
        skills: Mapping[str, Skill] | None = None,
    ) -> None:
        self.shared = shared
        self.config = shared.config
        self.store = store
        self.expressions = expressions
        self.contexts = contexts
        self.calls = calls
        self.memories = memories
        self.bindings = bindings
        self.agents = agents  # the program's agents, filled in before it runs
        self.skills = skills if skills is not None else {}  # imported skills, by name
        self._plans: dict[int, _Plan] = {}  # by id of the session node
        # Sessions bound by an `output name: shape =`, by node id: they ask for that shape.
        self.output_shapes: dict[int, n.Shape] = {}

    def _plan(self, node: n.Session) -> _Plan:
        """What a session statement decides by its text alone, worked out on its first run
        (a `pmap` runs one statement thousands of times)."""
        props = {p.name.id: p.value for p in node.properties}
        agent = self._agent_of(node)
        plan = _Plan(node, props, agent, self._model_of(props, agent))
        shape = returns_of(node) or self.output_shapes.get(id(node))
        try:
            plan.typed = typed_of(shape, self.expressions.path)
        except ValueError as problem:
            raise ProseRuntimeError(
                str(problem), where=self.expressions.where(node), code="E180"
            ) from None
        self._plans[id(node)] = plan
        return plan

    async def run(
        self, node: n.Session, ctx: Ctx, step: str, name: str | None, *, statement: bool = False
    ) -> Value:
        """Run one session; `name` is the binding it is the value of (`let x = session`),
        when the caller binds it. A session statement (`statement`) opens its own span when
        the run is traced: this coroutine runs the whole statement, and the span is handed
        to its model call as the parent (`Interpreter.stmt` wraps no coroutine around it and
        no context variable changes per session)."""
        tracer = self.shared.tracer
        span: StatementSpan | None = None
        plan = self._plans.get(id(node))
        if plan is None or plan.node is not node:
            plan = self._plan(node)
        if tracer is not None and (statement or plan.agent is not None):
            # A session of an agent is that agent's `invoke_agent` span, bound or not.
            agent_name = None if plan.agent is None else plan.agent.name
            span = tracer.statement(
                "session", step, self.expressions.path, node.span.line, agent_name
            )
        try:
            where = self.expressions.where
            props, agent, model = plan.props, plan.agent, plan.model
            task, system = self._task_and_system(node, props, agent, ctx, step)
            typed = plan.typed
            if typed is not None:
                task = f"{task}\n\n{typed.instruction()}"
            memory: AgentMemory | None = None
            memory_text: str | None = None
            ignored: str | None = None  # the memory a `session:` starts fresh from
            if agent is not None and agent.persist is not None:
                memory = self.memories.open(agent)
                if node.kind != "resume":
                    ignored = memory.read() or ""
            if node.kind == "resume":
                if agent is None or memory is None:
                    raise ProseRuntimeError(
                        f"`resume:` requires a persistent agent; add `persist:` to agent "
                        f"{agent.name if agent else '?'!r}",
                        where=where(node),
                        code="E017",
                    )
                memory_text = memory.read()
                if memory_text is None and step not in self.shared.replay.sessions:
                    raise ProseRuntimeError(
                        f"no memory exists yet for agent {agent.name!r}; use `session:` first",
                        where=where(node),
                        code="E018",
                    )
            label = name or (node.name.id if node.name else None)
            if label is None and not ctx.in_pipeline:
                label = self._anon_name(step)
            context_items = self.contexts.for_session(
                props.get("context"), ctx, step, len(task) + len(system or ""), memory_text
            )
            if memory_text is not None:
                memory_text = context_items.pop(0).text
            text, shared = user_message(task, context_items, memory_text)
            request = ModelRequest(
                model=model,
                messages=(Message("user", text, shared_prefix=shared),),
                system=system,
                max_tokens=self.config.max_tokens,
                response_schema=typed.schema if typed is not None else None,
                structured=typed is not None,
            )
            if plan.retry is None:
                plan.retry = self._retry_policy(props, node)
            retries, backoff = plan.retry
            response = await self._ask(
                step,
                request,
                alias=model,
                agent=agent,
                node=node,
                retries=retries,
                backoff=backoff,
                label=label,
                parent=span,
                context=[item.label for item in context_items] if props.get("context") else None,
            )
            value: Value = response.text
            if typed is not None:
                response, value = await self._typed_answer(
                    typed, request, response, step, node, agent, label
                )
            answer = response.text
            if memory is not None and agent is not None:
                with self._within(span):
                    await self.memories.update(agent, memory, step, task, answer, ignored=ignored)
            self._record(node, ctx, step, name, label, answer, value)
        except BaseException as error:
            if span is not None:
                span.end(error)
            raise
        if span is not None:
            span.end(None)
        return value

    async def _typed_answer(
        self,
        typed: Typed,
        request: ModelRequest,
        response: ModelResponse,
        step: str,
        node: n.Session,
        agent: AgentSpec | None,
        label: str | None,
    ) -> tuple[ModelResponse, Value]:
        """The answer's value; an invalid answer is asked again once (journaled as its own
        step), then fails the session (catchable, as any session failure)."""
        value, found = typed.read(response.text)
        if not found:
            return response, value
        if step not in self.shared.replay.reasked:  # a resume reads the served answer again
            self.shared.emit(ev.TypedInvalid(step=step, problems=found))
        retry = ModelRequest(
            request.model,
            (
                *request.messages,
                Message("assistant", response.text),
                Message("user", typed.reask(found)),
            ),
            request.system,
            request.max_tokens,
            response_schema=typed.schema,
            structured=True,
        )
        response = await self.calls.call(
            step + RETRY_SUFFIX,
            retry,
            alias=request.model,
            agent=agent.name if agent else None,
            where=node,
            label=label,
        )
        value, found = typed.read(response.text)
        if not found:
            return response, value
        self.shared.emit(ev.TypedFailed(step=step, problems=found))
        shown = label or f"session {step}"
        raise SessionFailed(
            f"{shown}: the answer does not match its declared shape, asked twice: "
            + "; ".join(found),
            where=self.expressions.where(node),
        )

    def _within(self, span: StatementSpan | None) -> AbstractContextManager[None]:
        """`span` as the current span (the parent of spans made by code it is not handed
        to: a tool loop's tool calls, a memory update's model call)."""
        tracer = self.shared.tracer
        if span is None or tracer is None:
            return nullcontext()
        return tracer.current(span)

    def _ask(
        self,
        step: str,
        request: ModelRequest,
        *,
        alias: str,
        agent: AgentSpec | None,
        node: n.Session,
        retries: int,
        backoff: str,
        label: str | None,
        parent: StatementSpan | None,
        context: list[str] | None = None,
    ) -> Awaitable[ModelResponse]:
        """The session's model call: the request goes out, the (final) answer comes back.
        An agent that declares `permissions:` or `skills:` gets tools: its session runs the
        tool loop instead (model turns as sub-steps of `step`). Not a coroutine of its own:
        it hands back the call's, one layer less to resume while the call is out."""
        if agent is not None and (agent.permissions or agent.skills):
            return self._ask_with_tools(
                step, request, alias=alias, agent=agent, node=node, retries=retries,
                backoff=backoff, label=label, parent=parent, context=context,
            )  # fmt: skip
        return self.calls.call(
            step,
            request,
            alias=alias,
            agent=agent.name if agent else None,
            where=node,
            retries=retries,
            backoff=backoff,
            label=label,
            parent=parent,
            context=context,
        )

    async def _ask_with_tools(
        self,
        step: str,
        request: ModelRequest,
        *,
        alias: str,
        agent: AgentSpec,
        node: n.Session,
        retries: int,
        backoff: str,
        label: str | None,
        parent: StatementSpan | None,
        context: list[str] | None = None,
    ) -> ModelResponse:
        # Imported here: a program whose agents have no tools never loads the tool machinery.
        from openprose.vm.tools.permissions import Permissions
        from openprose.vm.tools.toolbox import Toolbox, ToolLimits

        shared = self.shared
        toolbox = Toolbox(
            shared.project_dir,
            Permissions.from_mapping(
                agent.permissions, shared.tools.default_permissions
            ).within_all(agent.ceilings),
            agent=agent.name,
            skills={name: self.skills[name] for name in agent.skills if name in self.skills},
            approver=shared.tools.approver,
            limits=ToolLimits(
                output_cap=self.config.tool_output_cap,
                command_timeout=self.config.command_timeout,
                search_timeout=self.config.search_timeout,
            ),
            grants=shared.tools.grants,
            plan=shared.tools.plan,
            seal_grant=shared.tools.seal_grant,
        )
        if shared.tools.sandbox_limits is not None:
            toolbox.sandbox_limits = shared.tools.sandbox_limits
        session = self._tool_session(
            step, request, toolbox, alias=alias, agent=agent, node=node, retries=retries,
            backoff=backoff, label=label, parent=parent, context=context,
        )  # fmt: skip
        if toolbox.permissions.mcp.never:
            return await session
        from openprose.vm.tools.mcp_tools import McpFailure, mcp_tool_rows

        try:
            async with mcp_tool_rows(shared.tools.mcp_servers, toolbox) as rows:
                toolbox.add_rows(rows)
                return await session
        except McpFailure as failure:  # a server missing, crashed or silent: catchable
            shared.emit(ev.SessionFailed(step=step, error=str(failure)))
            raise SessionFailed(str(failure), where=self.expressions.where(node)) from None
        finally:
            session.close()  # never started when its servers could not be: no warning

    async def _tool_session(
        self,
        step: str,
        request: ModelRequest,
        toolbox: Toolbox,
        *,
        alias: str,
        agent: AgentSpec,
        node: n.Session,
        retries: int,
        backoff: str,
        label: str | None,
        parent: StatementSpan | None,
        context: list[str] | None,
    ) -> ModelResponse:
        """A session whose agent has tools: the tool loop, or a plain call with none."""
        from openprose.vm.toolloop import (
            CallLimits,
            ToolLoopExhausted,
            run_tool_loop,
            tool_system_prompt,
            turn_step,
        )

        shared = self.shared
        if not toolbox.specs:  # everything denied: nothing to offer, a plain completion
            response = await self.calls.call(
                step, request, alias=alias, agent=agent.name, where=node,
                retries=retries, backoff=backoff, label=label, parent=parent, context=context,
            )  # fmt: skip
            return response
        request = ModelRequest(
            request.model,
            request.messages,
            tool_system_prompt(request.system, toolbox),
            request.max_tokens,
            request.temperature,
        )

        async def send(turn_request: ModelRequest, turn: int, added: int | None) -> ModelResponse:
            return await self.calls.call(
                turn_step(step, turn),
                turn_request,
                alias=alias,
                agent=agent.name,
                where=node,
                retries=retries,
                backoff=backoff,
                label=label,
                event="session" if turn == 0 else "tool_turn",
                continues=None if added is None else (turn_step(step, turn - 1), added),
                context=context if turn == 0 else None,
            )

        def emit_now(event: ev.Event) -> None:
            # Tool calls, permissions, approvals and results are written at once: a tool acts
            # outside the process, and a resume must know what it already did.
            shared.emit(event)
            shared.commit()

        try:
            with self._within(parent):  # its turns' calls and its tool calls
                response, turns = await run_tool_loop(
                    request,
                    step=step,
                    toolbox=toolbox,
                    journaled=shared.replay.tools,
                    max_turns=self.config.max_turns,
                    send=send,
                    emit=emit_now,
                    limits=CallLimits(
                        self.config.max_tool_calls_per_turn,
                        self.config.max_tool_calls_per_session,
                    ),
                )
        except ToolLoopExhausted as exhausted:
            shared.emit(ev.SessionFailed(step=step, error=str(exhausted)))
            raise SessionFailed(str(exhausted), where=self.expressions.where(node)) from None
        if turns > 1:
            self.store.state(f"{step}→ tools: {turns - 1} turn(s) of tool calls")
        return response

    def _record(
        self,
        node: n.Session,
        ctx: Ctx,
        step: str,
        name: str | None,
        label: str | None,
        answer: str,
        value: Value,
    ) -> None:
        """The answer in the thread's history, its binding (``value``: the answer, or its
        typed value), and the line in state.md."""
        shown = label or f"session {step}"
        ctx.history.add(shown, answer)
        if label is not None and name is None and node.name is None:
            self.bindings.write(label, "let", node, value, ctx)
        elif node.name is not None and name is None:
            ctx.scope.declare(node.name.id, value)
            self.bindings.write(node.name.id, "let", node, value, ctx)
        if not ctx.in_pipeline:
            self.store.state(f"{step}→ {name or label} ✓")

    def _task_and_system(
        self,
        node: n.Session,
        props: dict[str, Any],
        agent: AgentSpec | None,
        ctx: Ctx,
        step: str,
    ) -> tuple[str, str | None]:
        """The session's prompt is the task and its agent's prompt the system prompt; an
        agent's session without a prompt of its own takes the agent's prompt as its task."""
        placeholder = self.contexts.placeholder(step)
        interpolated = self.expressions.interpolate

        def interpolate(text: n.StringLit, ctx: Ctx) -> str:
            return interpolated(text, ctx, placeholder)

        session_prompt = node.prompt if node.prompt is not None else props.get("prompt")
        if node.prompt is not None and isinstance(props.get("prompt"), n.StringLit):
            # `session "Title"` with a `prompt:` property: the property is the prompt and the
            # inline string the session's title (docs/decisions.md, Issue 20 item 1)
            self.store.state(f"{step}→ title: {interpolate(node.prompt, ctx)}")
            session_prompt = props["prompt"]
        if session_prompt is not None and not isinstance(session_prompt, n.StringLit):
            session_prompt = None
        if session_prompt is not None:
            task = interpolate(session_prompt, ctx)
            system = interpolate(agent.prompt, ctx) if agent and agent.prompt else None
            return task, system
        if agent is not None and agent.prompt is not None:
            return interpolate(agent.prompt, ctx), None
        return NO_TASK, None

    def _agent_of(self, node: n.Session) -> AgentSpec | None:
        if node.agent is None:
            return None
        agent = self.agents.get(node.agent.id)
        if agent is None:
            raise ProseRuntimeError(
                f"undefined agent {node.agent.id!r}",
                where=self.expressions.where(node),
                code="E007",
            )
        return agent

    def _model_of(self, props: dict[str, Any], agent: AgentSpec | None) -> str:
        if "model" in props:
            return str(literal(props["model"]))
        if agent is not None and agent.model:
            return agent.model
        return self.config.default_model

    def _retry_policy(self, props: dict[str, Any], node: n.Session) -> tuple[int, str]:
        retries = literal(props["retry"]) if "retry" in props else 0
        backoff = str(literal(props["backoff"])) if "backoff" in props else "none"
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ProseRuntimeError(
                f"retry must be a positive integer, got {retries!r}",
                where=self.expressions.where(node),
            )
        if backoff not in _BACKOFFS:
            raise ProseRuntimeError(
                f"backoff must be none, linear or exponential, got {backoff!r}",
                where=self.expressions.where(node),
            )
        return retries, backoff

    def _anon_name(self, step: str) -> str:
        served = self.shared.replay.sessions.get(step)
        if served is not None and served.get("binding"):
            name = str(served["binding"])
            number = name.removeprefix("anon_")
            if number.isdigit():  # later new sessions must not reuse the number
                self.shared.anon_names = max(self.shared.anon_names, int(number))
            return name
        self.shared.anon_names += 1
        return f"anon_{self.shared.anon_names:03d}"
