"""The Ray executor: runs go to Ray workers, rows come back to this process, which writes
them exactly as the in-process executor does (same rows, same resume semantics).

Each worker is an async actor holding one `CaseRunner` (program checked, provider open once),
running its share of `--max-runs` cases concurrently with its share of the provider limit, so
the whole batch keeps both. A worker that is lost (its process or node dies) costs only its
cases in flight: this process sends them again, as resumed runs, to the workers left.
Run folders are written by the workers under the batch's project folder: on one machine that
is the same disk; on a multi-node cluster that folder must be a shared file system
(docs/batch.md).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from openprose.batches.job import BatchSpec, CaseRunner, Job

__all__ = ["RayUnavailable", "preflight", "run_on_ray", "shares", "shipped_environment"]

# How long an actor may wait for a CPU (or a lost one be waited for) before the batch goes on
# without it: Ray itself waits forever for a resource that no longer exists.
PLACEMENT_WAIT_S = 30.0
CLOSE_WAIT_S = 10.0
# The environment a worker needs to open the provider and export traces like this process.
SHIPPED_PREFIXES = ("PROSE_", "OPENAI_", "ANTHROPIC_", "OTEL_")
# Ray writes a runtime_env, variables and all, into its agents' logs: a variable whose name
# may hold a secret goes to each worker in its `open` call instead (a task argument).
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH", "CREDENTIAL", "HEADERS")


class RayUnavailable(RuntimeError):
    """The `[ray]` extra is not installed, the cluster cannot be reached or used."""


class _Worker:
    """The actor's body (wrapped by `ray.remote` at run time, so importing this module
    does not need Ray)."""

    def __init__(self) -> None:
        self._runner: CaseRunner | None = None

    async def open(self, spec: BatchSpec, secrets: dict[str, str]) -> str | None:
        """Check the program and open the provider; why not, in one line."""
        from openprose.session.launch import RunError

        os.environ.update(secrets)  # this process is this actor's alone
        try:
            self._runner = CaseRunner(spec)
        except RunError as error:
            return str(error).splitlines()[0] if str(error) else type(error).__name__
        return None

    async def run(self, job: Job) -> dict[str, Any]:
        assert self._runner is not None, "open() first"
        return await self._runner.run(job)

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.aclose()


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailable(
            "the Ray executor needs the [ray] extra: pip install 'openprose[ray]'"
        ) from None
    return ray


def cluster_address(address: str | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The cluster to join: `--ray-address`, else `RAY_ADDRESS` (as `ray.init` reads it)."""
    return address or env.get("RAY_ADDRESS") or None


def preflight(address: str | None, env: Mapping[str, str] = os.environ) -> None:
    """Fail fast, before a batch folder exists: Ray must be installed, and a cluster named
    by `host:port` (or `RAY_ADDRESS`) must accept a connection (Ray itself waits minutes
    for an absent one)."""
    _ray()
    address = cluster_address(address, env)
    if not address or address in ("auto", "local") or "://" in address:
        return
    import socket

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"Ray address {address!r}: give HOST:PORT of the cluster's head")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as error:
        raise RayUnavailable(
            f"cannot start Ray ({address}): nothing answers there ({error.strerror or error})"
        ) from None


def shipped_environment(project_dir: str, env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables the workers need (a remote cluster's workers do not inherit this
    process's environment): the provider's settings and keys, and the key variables that
    prose.toml names with `api_key_env`."""
    from pathlib import Path

    from openprose.providers.settings import read_config

    names = {name for name in env if name.startswith(SHIPPED_PREFIXES)}
    try:
        config, _ = read_config(Path(project_dir))
    except Exception:  # noqa: BLE001 - the driver has checked it; nothing more to ship
        config = {}
    tables = config.get("providers")
    for table in tables.values() if isinstance(tables, dict) else ():
        if isinstance(table, dict) and isinstance(table.get("api_key_env"), str):
            names.add(table["api_key_env"])
    return {name: env[name] for name in sorted(names) if name in env}


def is_secret(name: str) -> bool:
    return any(word in name.upper() for word in SECRET_WORDS)


def shares(total: int, parts: int) -> list[int]:
    """`total` split into `parts` whole shares that add up to it exactly."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def one_line(error: BaseException) -> str:
    """Ray's multi-line messages as one line: a worker's traceback as its last exception
    line, other messages (a version mismatch names both versions on lines of their own)
    joined; without the terminal colours Ray adds."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    raised = [x.strip() for x in text.splitlines() if re.match(r"\s*\w+(Error|Exception): ", x)]
    if raised:
        return raised[-1]
    return re.sub(r"\s+", " ", text).strip() or type(error).__name__


async def run_on_ray(
    spec: BatchSpec,
    jobs: Iterator[Job],
    deliver: Callable[[dict[str, Any]], None],
    max_runs: int,
    *,
    address: str | None = None,
    workers: int | None = None,
    place_within: float = PLACEMENT_WAIT_S,
) -> None:
    """Start (or join, with `address` or `RAY_ADDRESS`) a Ray instance and run every job on
    its actors; exactly `max_runs` runs and the provider limit in flight over all of them."""
    ray = _ray()
    limit = spec.options.max_concurrency or 1  # the driver resolves it (prose.toml's)
    started_here = not ray.is_initialized()
    shipped = shipped_environment(spec.project_dir)
    if started_here:
        settings = {name: value for name, value in shipped.items() if not is_secret(name)}
        _connect(ray, address, settings)
    secrets = {name: value for name, value in shipped.items() if is_secret(name)}
    try:
        actors = _place(ray, workers, max_runs, limit, place_within)
        try:
            await _open(ray, actors, spec, secrets)
            await _feed(ray, actors, jobs, deliver, max_runs)
        finally:
            await _close(ray, actors)
    finally:
        if started_here:
            ray.shutdown()


def _connect(ray: Any, address: str | None, environment: dict[str, str]) -> None:
    try:
        ray.init(
            address=address,
            runtime_env={"env_vars": environment},
            include_dashboard=False,
            log_to_driver=True,  # workers' warnings reach this terminal
            configure_logging=False,
        )
    except Exception as error:  # noqa: BLE001 - ConnectionError, ValueError, RuntimeError
        where = cluster_address(address) or "a local instance"
        raise RayUnavailable(f"cannot start Ray ({where}): {one_line(error)}") from None


def _place(
    ray: Any, workers: int | None, max_runs: int, max_concurrency: int, place_within: float
) -> list[Any]:
    """One actor per CPU the cluster can give now (each needs one run and one request of
    the limit at least); those not placed within `place_within` seconds are given up."""
    free = int(ray.available_resources().get("CPU", 0))
    count = min(workers or max(1, free), max_runs, max_concurrency)
    actor_class = ray.remote(num_cpus=1)(_Worker)
    # async actor: its calls run concurrently up to this bound; the feeders keep the real one
    actors = [actor_class.options(max_concurrency=max_runs + 2).remote() for _ in range(count)]
    probes = [a.__ray_ready__.remote() for a in actors]
    ready, _ = ray.wait(probes, num_returns=count, timeout=place_within)
    placed = [actor for actor, probe in zip(actors, probes, strict=True) if probe in ready]
    for actor in actors:
        if actor not in placed:
            ray.kill(actor)  # it would wait for a CPU forever
    if not placed:
        raise RayUnavailable(
            f"no Ray worker could be placed within {place_within:g} s: the cluster has no "
            "free CPU (is every node busy or gone?)"
        )
    return placed


async def _open(ray: Any, actors: list[Any], spec: BatchSpec, secrets: dict[str, str]) -> None:
    """Each actor opens the program and its share of the provider limit; a worker that
    cannot (settings missing on the cluster) is one clear line, not a traceback."""
    limits = shares(spec.options.max_concurrency or 1, len(actors))
    calls = [
        actor.open.remote(
            replace(spec, options=replace(spec.options, max_concurrency=limit)), secrets
        )
        for actor, limit in zip(actors, limits, strict=True)
    ]
    try:
        problems = await asyncio.gather(*calls)
    except ray.exceptions.RayError as error:
        raise RayUnavailable(
            "a Ray worker failed to start (is this openprose version installed on every "
            f"node?): {one_line(_cause(error))}"
        ) from None
    for problem in problems:
        if problem is not None:
            raise RayUnavailable(f"a Ray worker cannot open the program: {problem}")


async def _feed(
    ray: Any,
    actors: list[Any],
    jobs: Iterator[Job],
    deliver: Callable[[dict[str, Any]], None],
    max_runs: int,
) -> None:
    """`max_runs` feeders, each keeping one run in flight on its actor. A feeder whose actor
    is lost puts its job back, as a resumed run, for the feeders of the actors left."""
    lost_errors = (
        ray.exceptions.RayActorError,
        ray.exceptions.WorkerCrashedError,
        ray.exceptions.NodeDiedError,
        ray.exceptions.ObjectLostError,
    )
    again: deque[Job] = deque()
    lost: set[int] = set()
    last_loss: list[str] = []
    pending = 0  # calls in flight: while any, a lost worker may still give a job back
    changed = asyncio.Event()
    more = True  # whether `jobs` may have more

    async def next_job() -> Job | None:
        nonlocal more
        while True:
            if again:
                return again.popleft()
            if more:
                job = next(jobs, None)
                if job is not None:
                    return job
                more = False
            if pending == 0:
                return None
            changed.clear()
            await changed.wait()

    async def feeder(index: int, actor: Any) -> None:
        nonlocal pending
        while index not in lost and (job := await next_job()) is not None:
            pending += 1
            try:
                row = await actor.run.remote(job)
            except lost_errors as error:
                again.append(replace(job, resume=True))  # its journal keeps what it did
                if index not in lost:
                    lost.add(index)
                    last_loss.append(one_line(error).split(". ")[0])
                    ray.kill(actor)  # a worker only cut off must not go on writing its runs
                return
            except ray.exceptions.RayTaskError as error:
                cause = _cause(error)
                if isinstance(cause, OSError):
                    raise cause from None  # the disk is full: the batch stops (`driver`)
                raise RayUnavailable(f"a Ray worker failed: {one_line(cause)}") from None
            finally:
                pending -= 1
                changed.set()
            deliver(row)

    slots = shares(max_runs, len(actors))
    await asyncio.gather(
        *(
            feeder(index, actor)
            for index, (actor, count) in enumerate(zip(actors, slots, strict=True))
            for _ in range(count)
        )
    )
    if again:  # every actor was lost before the last jobs ran
        raise RayUnavailable(
            f"every Ray worker was lost ({len(lost)} of {len(actors)}; last: {last_loss[-1]}); "
            "the cases not done yet can be run with prose batch --resume"
        )


async def _close(ray: Any, actors: list[Any]) -> None:
    closing = asyncio.gather(*(a.close.remote() for a in actors), return_exceptions=True)
    try:
        await asyncio.wait_for(closing, CLOSE_WAIT_S)
    except TimeoutError:
        pass  # a worker on a node that is gone does not answer; it is killed below
    for actor in actors:
        ray.kill(actor)


def _cause(error: BaseException) -> BaseException:
    """What a worker raised, out of Ray's wrapper."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error
