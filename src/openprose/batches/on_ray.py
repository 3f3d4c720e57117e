"""The Ray executor: runs go to Ray workers, rows come back to this process, which writes
them exactly as the in-process executor does (same rows, same resume semantics).

Each worker is an async actor holding one `CaseRunner` (program checked, provider open once),
running many cases concurrently. Run folders are written by the workers under the batch's
project folder: on one machine that is the same disk; on a multi-node cluster that folder
must be a shared file system (docs/batch.md).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from typing import Any

from openprose.batches.job import BatchSpec, CaseRunner, Job

__all__ = ["RayUnavailable", "preflight", "run_on_ray"]


class RayUnavailable(RuntimeError):
    """The `[ray]` extra is not installed, or the cluster cannot be reached."""


class _Worker:
    """The actor's body (wrapped by `ray.remote` at run time, so importing this module
    does not need Ray)."""

    def __init__(self, spec: BatchSpec) -> None:
        self._spec = spec
        self._runner: CaseRunner | None = None

    async def run(self, job: Job) -> dict[str, Any]:
        if self._runner is None:  # in the actor's own event loop
            self._runner = CaseRunner(self._spec)
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


def preflight(address: str | None) -> None:
    """Fail fast, before a batch folder exists: Ray must be installed, and a cluster named
    by `host:port` must accept a connection (Ray itself waits minutes for an absent one)."""
    _ray()
    if not address or address in ("auto", "local") or "://" in address:
        return
    import socket

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"--ray-address {address!r}: give HOST:PORT of the cluster's head")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as error:
        raise RayUnavailable(
            f"cannot start Ray ({address}): nothing answers there ({error.strerror or error})"
        ) from None


async def run_on_ray(
    spec: BatchSpec,
    jobs: Iterator[Job],
    deliver: Callable[[dict[str, Any]], None],
    max_runs: int,
    *,
    address: str | None = None,
    workers: int | None = None,
) -> None:
    """Start (or join, with `address`) a Ray instance and run every job on its actors;
    `max_runs` runs in flight over all of them."""
    ray = _ray()
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        except Exception as error:  # noqa: BLE001 - ConnectionError, ValueError, RuntimeError
            where = address or "a local instance"
            raise RayUnavailable(f"cannot start Ray ({where}): {error}") from None
    try:
        count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        per_actor = max(1, math.ceil(max_runs / count))
        actor_class = ray.remote(num_cpus=1)(_Worker)  # one per CPU, spread over nodes
        actors = [actor_class.options(max_concurrency=per_actor).remote(spec) for _ in range(count)]

        async def feed(actor: Any) -> None:
            for job in jobs:
                deliver(await actor.run.remote(job))

        try:
            await asyncio.gather(*(feed(a) for a in actors for _ in range(per_actor)))
        finally:
            await asyncio.gather(*(a.close.remote() for a in actors), return_exceptions=True)
            for actor in actors:
                ray.kill(actor)
    finally:
        if started_here:
            ray.shutdown()
