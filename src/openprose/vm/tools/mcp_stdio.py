"""A stdio MCP server started inside the agent's sandbox, as an MCP SDK transport.

The SDK's own stdio transport cannot hand bubblewrap the open folder fds the sandbox mounts
from, so the process is started here (same bubblewrap command line as `run_command`, same
limits) and its pipes are framed as the SDK expects: one JSON-RPC message per line.
The server's environment is the sandbox's clean one plus what its `env` declares.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp_types
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from openprose.vm.tools.limits import launcher
from openprose.vm.tools.mcp_config import McpConfigError, McpServer
from openprose.vm.tools.mounts import Mount, close_mounts
from openprose.vm.tools.sandbox import CLEAN_ENV, Sandbox, SandboxUnavailable, sandbox_problem

__all__ = ["StderrTail", "sandboxed_stdio"]

LINE_LIMIT = 16 * 1024 * 1024  # bytes of one message line
TAIL = 2000  # characters of the server's stderr kept for a failure message


class StderrTail:
    """The last words of a server on stderr: what a failure message quotes."""

    def __init__(self) -> None:
        self.text = ""

    def add(self, chunk: bytes) -> None:
        self.text = (self.text + chunk.decode("utf-8", "replace"))[-TAIL:]


def _readable_mounts(server: McpServer, root: Path) -> list[Mount]:
    """Read-only binds of the folders the server declares it reads (its installation)."""
    mounts: list[Mount] = []
    try:
        for folder in server.readable:
            path = Path(folder)
            if not path.is_absolute():
                raise McpConfigError(f"{server.where} readable {folder!r} must be absolute")
            real = Path(os.path.realpath(path))
            if real == Path("/") or root.is_relative_to(real):
                raise McpConfigError(
                    f"{server.where} readable {folder!r} holds the project; name the "
                    f"folders the server itself needs (the project is mounted already)"
                )
            try:
                fd = os.open(real, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError as exc:
                raise McpConfigError(
                    f"{server.where} readable {folder!r}: {exc.strerror or exc}"
                ) from None
            mounts.append(Mount("ro-bind", real, fd))
    except BaseException:
        close_mounts(mounts)
        raise
    return mounts


@contextlib.asynccontextmanager
async def sandboxed_stdio(
    server: McpServer, sandbox: Sandbox, tail: StderrTail
) -> AsyncIterator[TransportStreams]:
    """Start `server` in `sandbox`; raises SandboxUnavailable, McpConfigError, OSError."""
    problem = sandbox_problem()
    if problem is not None:
        raise SandboxUnavailable(problem)
    assert server.command is not None
    env = {**server.resolved_env(), **CLEAN_ENV}  # PATH, HOME, LANG, TERM: the sandbox's
    extra = await asyncio.to_thread(_readable_mounts, server, sandbox.project_root)
    try:
        mounts = [*extra, *await asyncio.to_thread(sandbox.mounts)]  # the project's on top
    except BaseException:
        close_mounts(extra)
        raise
    try:
        line = sandbox.command_line([server.command, *server.args], mounts)
        line.remove("--clearenv")  # bubblewrap starts with `env`, no more: it passes it on
        process = await asyncio.create_subprocess_exec(
            *launcher(sandbox.limits),
            *line,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            pass_fds=tuple(m.fd for m in mounts if m.fd is not None),
            start_new_session=True,
            limit=LINE_LIMIT,
        )
    finally:
        close_mounts(mounts)
    try:
        async with _framed(process, tail) as streams:
            yield streams
    finally:
        await _stop(process)


@contextlib.asynccontextmanager
async def _framed(
    process: asyncio.subprocess.Process, tail: StderrTail
) -> AsyncIterator[TransportStreams]:
    assert process.stdin and process.stdout and process.stderr
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with incoming:
            while line := await stdout.readline():
                if not line.strip():
                    continue
                try:
                    message = mcp_types.jsonrpc_message_adapter.validate_json(line)
                except ValueError as exc:
                    await incoming.send(exc)
                    continue
                await incoming.send(SessionMessage(message))

    async def write() -> None:
        async with outgoing:
            async for message in outgoing:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                stdin.write(text.encode("utf-8") + b"\n")
                with contextlib.suppress(ConnectionError):
                    await stdin.drain()

    async def keep_stderr() -> None:
        while chunk := await stderr.read(4096):
            tail.add(chunk)

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        group.start_soon(keep_stderr)
        try:
            yield read_stream, write_stream
        finally:
            group.cancel_scope.cancel()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Close its stdin, give it a moment, then kill its whole process group."""
    if process.stdin is not None:
        process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), 2.0)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
