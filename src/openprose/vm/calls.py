"""One model call, journaled: the single door through which sessions, judgments and memory
updates reach a provider.

A call is served from the journal when a resumed run already has its answer under the same
step id; otherwise it is routed (alias -> provider and model id), sent with the session's
retry policy, counted, and journaled as `session_finished` with request and response.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from openprose.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderConfigError,
    ProviderError,
    RetryAfterTooLongError,
    TransientProviderError,
    single_attempt,
)
from openprose.providers.resilient import (
    MAX_BACKOFF_EXPONENT,
    REQUEST_TALLY,
    RETRY_WATCH,
    ProviderRetry,
    ResilientProvider,
)
from openprose.record import events as ev
from openprose.record.runstore import RunStore
from openprose.vm import budget
from openprose.vm.errors import RunAborted, SessionFailed, location
from openprose.vm.runtime import Shared

if TYPE_CHECKING:
    from openprose.telemetry.spans import StatementSpan
    from openprose.vm.memo import AnswerMemo


class ModelCalls:
    def __init__(self, shared: Shared, store: RunStore, path: str) -> None:
        self.shared = shared
        self.store = store
        self.path = path  # of the program, for the location of a failed call
        self.memo: AnswerMemo | None = None
        # Where each provider of a traced run sends its requests (`server_of`), by its id:
        # the router keeps every provider for the whole run.
        self._servers: dict[int, tuple[str, int] | None] = {}
        if shared.config.memo:
            from openprose.vm.memo import MEMO_DIR, AnswerMemo

            self.memo = AnswerMemo(shared.project_dir / MEMO_DIR)

    async def call(
        self,
        step: str,
        request: ModelRequest,
        *,
        alias: str,
        agent: str | None,
        where: Any,
        retries: int = 0,
        backoff: str = "none",
        label: str | None = None,
        event: str = "session",
        continues: tuple[str, int] | None = None,
        parent: StatementSpan | None = None,
        context: list[str] | None = None,
    ) -> ModelResponse:
        """`continues` = (step of the turn this request continues, messages added since):
        a tool-loop turn, journaled as a delta (`request_delta`) rather than whole, so a
        turn's journal cost does not grow with the conversation. `parent`: the span of the
        statement the call is made for, when its caller has it (else the current span).
        `context`: the names the request's `context:` gave it (the trail links the answers)."""
        shared = self.shared
        served = shared.replay.sessions.get(step)
        if served is not None:
            response = ModelResponse.from_dict(served["response"])
            shared.stats.served += 1
            shared.stats.count(response.model or alias, response)
            shared.emit(ev.SessionServed(step=step, binding=label))
            return response
        handled = shared.replay.failures.get(step)
        if handled is not None:
            # The earlier attempt's program handled this failure (`catch`, `on-fail`): the
            # same failure again keeps a resumed run on the path it took.
            shared.stats.served += 1
            shared.emit(ev.FailureServed(step=step, binding=label, error=handled))
            raise _failed(handled, self.path, where, step)
        try:
            provider, model_id = shared.router.route(alias)
        except ProviderConfigError as error:
            raise RunAborted(str(error)) from None
        request = _routed(request, model_id)
        inherited = shared.replay.inherited
        if inherited is not None:  # a fork: its parent's answer to the very same request
            taken = inherited.take(step, request)
            if taken is not None:
                shared.stats.served += 1
                return self._answered_before(
                    step, request, taken.response, alias, agent, label, event, continues,
                    {"inherited": taken.origin},
                )  # fmt: skip
        if shared.config.max_cost is not None and shared.stats.prices.price_of(model_id) is None:
            raise RunAborted(
                f"--max-cost cannot be kept: model {model_id!r} (alias {alias!r}) has no price; "
                f'add it to prose.toml as [prices."{model_id}"] with input = and output = '
                f"(USD per million tokens)"
            )
        budget.check(shared.config, shared.stats)
        memo_key = None
        if self.memo is not None and not request.tools:  # tool turns: tools act in between
            from openprose.vm.memo import memo_key as key_of

            memo_key = key_of(str(getattr(provider, "name", "") or ""), request)
            remembered = self.memo.get(memo_key)
            # Across runs only: the same request twice in one run (two identical branches)
            # is sent twice, as without the memo.
            if remembered is not None and remembered.run != shared.journal.path.parent.name:
                shared.stats.memoized += 1
                memo = {"key": memo_key, "run": remembered.run, "step": remembered.step}
                return self._answered_before(
                    step, request, remembered.response, alias, agent, label, event, continues,
                    {"memo": memo},
                )  # fmt: skip
        shared.emit(
            ev.new_session_started(
                step=step, agent=agent, model=alias, binding=label, kind=event,
                context=context or None,  # written only when the request named a `context:`
            )
        )  # fmt: skip
        asked, delta = _journaled_request(request, continues)
        # With a `retry:` the program owns the retries: each attempt is one request, with no
        # transient retries of the provider behind it, so attempts never multiply. Without
        # one, the provider's transient-retry policy applies. The concurrency limit is the
        # provider's own (per provider, per attempt).
        send = provider.complete if retries == 0 else single_attempt(provider)
        tracer = shared.tracer
        if tracer is not None:
            provider_name = str(getattr(provider, "name", "") or type(provider).__name__)
            if id(provider) not in self._servers:
                self._servers[id(provider)] = server_of(provider)
            server = self._servers[id(provider)]
        attempt = 0
        REQUEST_TALLY.set(shared.stats)  # the provider's own retries are this run's requests
        retried: _RetryRecorder | None = None
        if isinstance(provider, ResilientProvider):  # the one that retries: each is journaled
            retried = _RetryRecorder(shared, step)
            RETRY_WATCH.set(retried.record)
        while True:
            attempt += 1
            if retried is not None:
                retried.attempt = attempt
            started = time.perf_counter_ns()
            shared.stats.in_flight += 1
            shared.stats.requests += 1
            try:
                if tracer is not None:  # the attempt in its GenAI span (`openprose.telemetry.otel`)
                    span = tracer.model_call(
                        step, request, alias=alias, provider=provider_name, kind=event,
                        attempt=attempt, parent=parent, server=server,
                    )  # fmt: skip
                    try:
                        if not shared.streams:
                            response = await send(request)
                        else:
                            with shared.watching(step):
                                response = await send(request)
                    except BaseException as error:
                        span.end(None, error)
                        raise
                    span.end(response, None)
                elif not shared.streams:
                    response = await send(request)
                else:
                    with shared.watching(step):  # streams to the live view, if it watches
                        response = await send(request)
            except asyncio.CancelledError:
                shared.emit(ev.SessionCancelled(step=step, attempt=attempt))
                raise
            except ProviderConfigError as error:
                raise RunAborted(str(error)) from None
            except ProviderError as error:
                # A server asking for a longer wait than the limit ends the retries too.
                last = attempt > retries or isinstance(error, RetryAfterTooLongError)
                shared.emit(
                    ev.SessionFailed(
                        step=step,
                        attempt=attempt,
                        error=str(error),
                        status=error.status,  # the HTTP status, None when no answer came
                        elapsed=(time.perf_counter_ns() - started) // 1000 / 1e6,  # send time
                        retried=not last,
                        request=asked,  # the audit trail shows what was asked
                        request_delta=delta,
                    )
                )
                if last:
                    failure = _failed(str(error), self.path, where, step)
                    failure.hint = error.note
                    if retries and attempt > retries:
                        failure.hint = (
                            f"gave up after {attempt} attempts, the session's `retry: {retries}`"
                        )
                    raise failure from None
                self.store.state(f"{step}→ retry:{attempt}/{retries}")
                delay = backoff_delay(backoff, attempt, shared.config.retry_base_delay)
                if isinstance(error, TransientProviderError) and error.retry_after:
                    delay = max(delay, error.retry_after)  # the server's `retry-after` is a floor
                if delay > 0:
                    await asyncio.sleep(delay)
                continue
            finally:
                shared.stats.in_flight -= 1
            elapsed = (time.perf_counter_ns() - started) // 1000 / 1e6  # seconds, to the µs
            shared.stats.sent += 1
            shared.stats.count(response.model or model_id, response)
            shared.emit(
                ev.new_session_finished(
                    step=step,
                    request=asked,
                    request_delta=delta,
                    response=response.to_dict(),
                    agent=agent,
                    model=alias,
                    binding=label,
                    attempt=attempt,
                    elapsed=elapsed,
                    kind=event,
                )
            )
            if memo_key is not None and self.memo is not None:
                self.memo.put(memo_key, response, self.shared.journal.path.parent.name, step)
            return response

    def _answered_before(
        self,
        step: str,
        request: ModelRequest,
        answer: ModelResponse,
        alias: str,
        agent: str | None,
        label: str | None,
        event: str,
        continues: tuple[str, int] | None,
        source: dict[str, Any],
    ) -> ModelResponse:
        """An answer not sent for: from the memo or a fork's parent. Journaled as a finished
        call that cost nothing (usage 0, attempt 0), with `source` saying where it came
        from (`memo`: its key, run and step; `inherited`: the parent run and step, or the
        binding `prose fork --set` gave)."""
        shared = self.shared
        asked, delta = _journaled_request(request, continues)
        free = ModelResponse(
            answer.text,
            finish_reason=answer.finish_reason,
            request_id=answer.request_id,
            model=answer.model,
            provider=answer.provider,
            tool_calls=answer.tool_calls,
        )
        shared.emit(
            ev.new_session_started(step=step, agent=agent, model=alias, binding=label, kind=event)
        )
        shared.emit(
            ev.new_session_finished(
                step=step,
                request=asked,
                request_delta=delta,
                response=free.to_dict(),
                agent=agent,
                model=alias,
                binding=label,
                attempt=0,
                elapsed=0.0,
                kind=event,
                memo=source.get("memo"),
                inherited=source.get("inherited"),
            )
        )
        return free


class _RetryRecorder:
    """Journals each request of one call that the provider retried by itself
    (`request_retried`): the server received it, so the trail and usage count it."""

    __slots__ = ("attempt", "shared", "step")

    def __init__(self, shared: Shared, step: str) -> None:
        self.shared = shared
        self.step = step
        self.attempt = 1  # the call's attempt (a `retry:` attempt) the requests belong to

    def record(self, retry: ProviderRetry) -> None:
        self.shared.emit(
            ev.RequestRetried(
                step=self.step,
                attempt=self.attempt,
                request=retry.request,
                status=retry.status,
                error=retry.error,
                elapsed=round(retry.elapsed, 6),
                delay=round(retry.delay, 6),
            )
        )


def _routed(request: ModelRequest, model_id: str) -> ModelRequest:
    """The request with its alias replaced by the provider's model id (positional: cheaper
    than `replace`)."""
    return ModelRequest(
        model_id,
        request.messages,
        request.system,
        request.max_tokens,
        request.temperature,
        request.response_schema,
        request.tools,
        structured=request.structured,
    )


def _failed(message: str, path: str, where: Any, step: str) -> SessionFailed:
    failure = SessionFailed(message, where=location(path, getattr(where, "span", None)))
    failure.failed_calls[step] = message
    return failure


def _journaled_request(
    request: ModelRequest, continues: tuple[str, int] | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """What a call's events journal of its request: (the whole request, None), or for a tool
    turn (None, what it added to the last). Keywords of the events, not a `**` dict: packing
    one costs a session ~8k instructions (rec30h)."""
    if continues is None:
        return request.to_dict(), None
    from openprose.providers.replay import request_delta  # tool turns only

    return None, request_delta(request, *continues)


def backoff_delay(backoff: str, attempt: int, base: float) -> float:
    if backoff == "linear":
        return base
    if backoff == "exponential":  # the exponent capped: `retry: 5000` must not overflow
        return float(base * 2.0 ** min(attempt - 1, MAX_BACKOFF_EXPONENT))
    return 0.0


def server_of(provider: object) -> tuple[str, int] | None:
    """The host and port `provider` sends its requests to, found through the layers wrapped
    around it (retries, recording); None for one that sends nothing over the network
    (scripted, replayed, local models)."""
    for _ in range(8):  # a few layers at most: never loop on a provider that wraps itself
        url = getattr(provider, "url", None)
        if isinstance(url, str):
            parts = urlsplit(url)
            if not parts.hostname:
                return None
            return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        provider = getattr(provider, "inner", None) or getattr(provider, "_inner", None)
        if provider is None:
            return None
    return None
