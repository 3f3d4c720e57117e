"""OTLP/HTTP requests for the export helper, configured the standard way.

The SDK's `OTLPSpanExporter` imports requests, urllib3 and the protobuf runtime: ~0.15 s of
CPU at the start of every traced run, as much as exporting 20,000 spans with
`openprose.telemetry.otlp`; the standard library's `http.client` still costs the helper ~20 ms
(the `email` package, `ssl`). This sender speaks the little HTTP/1.1 an OTLP export needs
over one kept-alive socket (`Connection`: a POST, then the answer's status, `retry-after`
and a body read to its end by length, chunks or close; TLS through `ssl` only for https),
and reads the settings the SDK reads, with the SDK's meaning:

* `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as the full URL, else `OTEL_EXPORTER_OTLP_ENDPOINT`
  + `/v1/traces`, else `http://localhost:4318/v1/traces`;
* `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` (`key=value,...`, URL-encoded; keys lower-cased);
* `OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT` in seconds (default 10), the time one batch may take
  including its retries;
* `OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION`: `gzip`, `deflate` or `none`;
* `OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE`, `..._CLIENT_CERTIFICATE`, `..._CLIENT_KEY` for TLS;
* `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`: `http/protobuf` (the default) is what is sent;
  `grpc` and `http/json` are refused with the setting named (`exporter_named`), never
  ignored — a collector listening for another protocol would drop every span.

Answers 429, 502, 503 and 504 and lost connections are retried (at most 6 tries, backoff
1, 2, 4... s with 20 % jitter, or the server's `retry-after` seconds) within the timeout.
After a request that could not be delivered, the next ones get one try each until one
succeeds: a collector that is down delays the end of a run by one timeout, not one per batch.
An endpoint where nothing has ever answered (connection refused: no collector started) is
not retried at all, and a stretch of failed exports is said once on stderr, in words.
Metrics are sent the same way (`signal="metrics"`: the `METRICS` settings, `/v1/metrics`).
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

TYPE_CHECKING = False  # the export helper starts without `typing`
if TYPE_CHECKING:
    import ssl

    from opentelemetry.sdk.resources import Resource

RETRYABLE = frozenset({429, 502, 503, 504})
# A connection that could not be opened at all: not retried while nothing has ever answered.
UNREACHABLE = (ConnectionRefusedError, socket.gaierror)
TRIES = 6
DEFAULT_TIMEOUT = 10.0


PROTOCOL = "http/protobuf"


def exporter_named(env: Mapping[str, str]) -> str:
    """`otlp` (the default) or `console`, from `OTEL_TRACES_EXPORTER`; ValueError otherwise,
    and for an OTLP protocol other than ours (`protocol`)."""
    chosen = (env.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")[0].strip().lower()
    if chosen not in ("otlp", "console"):
        raise ValueError(
            f"OTEL_TRACES_EXPORTER={chosen!r} is not supported here (use otlp or console)"
        )
    if chosen == "otlp":
        protocol(env)
    return chosen


def protocol(env: Mapping[str, str]) -> str:
    """The OTLP protocol the environment asks for (the traces setting first, as the SDK
    reads it): `http/protobuf`, the default; ValueError naming the setting otherwise."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = (env.get(name) or "").strip()
        if not value:
            continue
        if value.lower() != PROTOCOL:
            raise ValueError(
                f"{name}={value!r} is not supported here: traces are sent as OTLP over HTTP "
                f"with protobuf bodies (set {name}={PROTOCOL}, or unset it, and point the "
                f"endpoint at the collector's OTLP/HTTP port, 4318 by default)"
            )
        return PROTOCOL
    return PROTOCOL


def resource_from_environment(env: Mapping[str, str]) -> Resource:
    """The service is `OTEL_SERVICE_NAME` (default `openprose`), with the SDK's resource
    attributes (`OTEL_RESOURCE_ATTRIBUTES` among them)."""
    from opentelemetry.sdk.resources import Resource

    return Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "openprose"})


# The run's process hands its resource to the export helper in this variable (JSON), so
# that the helper need not load the SDK (~20 ms of CPU) to make the same one again.
RESOURCE_VARIABLE = "OPENPROSE_OTEL_RESOURCE"
# What `Resource.create` reads from the process's environment (not from `env`).
_RESOURCE_SETTINGS = (
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SERVICE_NAME",
    "OTEL_EXPERIMENTAL_RESOURCE_DETECTORS",
)


def resource_for_helper(env: Mapping[str, str]) -> str | None:
    """The resource of `env` as `RESOURCE_VARIABLE`'s value; None when this process's own
    environment would make another one (then the helper makes it from `env` itself)."""
    import os

    if any(env.get(name) != os.environ.get(name) for name in _RESOURCE_SETTINGS):
        return None
    import json

    resource = resource_from_environment(env)
    return json.dumps([dict(resource.attributes), resource.schema_url])


def resource_attributes(env: Mapping[str, str]) -> tuple[dict[str, object], str]:
    """(attributes, schema URL) of the resource spans are exported with: as the run's
    process handed it over, else made by the SDK from the environment."""
    handed = env.get(RESOURCE_VARIABLE)
    if handed:
        import json

        try:
            attributes, schema_url = json.loads(handed)
            return dict(attributes), str(schema_url or "")
        except (ValueError, TypeError):
            pass  # not ours after all: made again below
    resource = resource_from_environment(env)
    return dict(resource.attributes), resource.schema_url


def setting(env: Mapping[str, str], name: str, default: str = "", signal: str = "traces") -> str:
    """`OTEL_EXPORTER_OTLP_{SIGNAL}_{name}`, else `OTEL_EXPORTER_OTLP_{name}`."""
    return (
        env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_{name}")
        or env.get(f"OTEL_EXPORTER_OTLP_{name}")
        or default
    )


def endpoint(env: Mapping[str, str], signal: str = "traces") -> str:
    """Where a signal (`traces`, `metrics`) goes: its own endpoint as the full URL, else the
    shared base URL with `/v1/{signal}`."""
    own = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
    if own:
        return own
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"
    return f"{base.removesuffix('/')}/v1/{signal}"


def headers(text: str) -> dict[str, str]:
    """`key=value` pairs separated by commas, URL-encoded; a pair without `=` is skipped."""
    found = {}
    for pair in text.split(","):
        key, equals, value = pair.partition("=")
        key = unquote(key).strip().lower()
        if equals and key:
            found[key] = unquote(value).strip()
    return found


class OtlpHttp:
    """POSTs serialized export requests of one signal (`ExportTraceServiceRequest`s, or
    `ExportMetricsServiceRequest`s) to the endpoint configured for it."""

    def __init__(
        self, env: Mapping[str, str], user_agent: str = "openprose", signal: str = "traces"
    ) -> None:
        self.signal = signal
        self.url = endpoint(env, signal)
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the OTLP endpoint {self.url!r} is not an http(s) URL")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._netloc = parts.netloc.rpartition("@")[2]  # the Host header
        try:
            self.timeout = float(setting(env, "TIMEOUT", signal=signal) or DEFAULT_TIMEOUT)
        except ValueError:
            self.timeout = DEFAULT_TIMEOUT
        self.compression = setting(env, "COMPRESSION", "none", signal).strip().lower()
        if self.compression not in ("gzip", "deflate", "none"):
            self.compression = "none"
        self.headers = {"content-type": "application/x-protobuf", "user-agent": user_agent}
        self.headers.update(headers(setting(env, "HEADERS", signal=signal)))
        if self.compression != "none":
            self.headers.setdefault("content-encoding", self.compression)
        self._context: ssl.SSLContext | None = None
        if self._https:
            import ssl

            cafile = setting(env, "CERTIFICATE", signal=signal) or None
            self._context = ssl.create_default_context(cafile=cafile)
            certificate = setting(env, "CLIENT_CERTIFICATE", signal=signal)
            if certificate:
                key = setting(env, "CLIENT_KEY", signal=signal) or None
                self._context.load_cert_chain(certificate, key)
        self._head = (
            f"POST {self._path} HTTP/1.1\r\nhost: {self._netloc}\r\n"
            + "".join(f"{key}: {value}\r\n" for key, value in self.headers.items())
        ).encode()
        self._connection: Connection | None = None
        self._failing = False  # the last request was not delivered
        self._reached = False  # something answered at the endpoint once
        self._origin = "" if setting(env, "ENDPOINT", signal=signal) else " (the default endpoint)"

    def send(self, body: bytes) -> bool:
        """Export one request's body; False (said on stderr) when it could not be."""
        if self.compression == "gzip":
            import gzip

            body = gzip.compress(body)
        elif self.compression == "deflate":
            import zlib

            body = zlib.compress(body)
        deadline = time.monotonic() + self.timeout
        problem = ""
        for attempt in range(1 if self._failing else TRIES):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                status, reason, retry_after = self._post(body, left)
            except (OSError, ValueError) as error:  # ValueError: an answer not in HTTP
                self.close()
                problem = self._trouble(error)
                if isinstance(error, UNREACHABLE) and not self._reached:
                    break  # nothing has ever answered there: waiting would only delay the end
                if attempt == 0:
                    continue  # a kept-alive connection the server closed: once more at once
                wait = _backoff(attempt)
            else:
                self._reached = True
                if 200 <= status < 300:
                    self._failing = False
                    return True
                problem = f"the collector answered HTTP {status} {reason}".rstrip()
                if status == 404:
                    problem += (
                        f" (no OTLP {self.signal} receiver at that path: set OTEL_EXPORTER_OTLP_ENDPOINT "
                        "to the collector's base URL, e.g. http://localhost:4318)"
                    )
                if status not in RETRYABLE:
                    break
                wait = _backoff(attempt) if retry_after is None else retry_after
            if wait >= deadline - time.monotonic():
                break
            time.sleep(wait)
        if not self._failing:  # one line when exports start failing, not one a batch
            what = "spans" if self.signal == "traces" else self.signal
            print(
                f"prose: {what} not exported to {self.url}{self._origin}: {problem}; "
                f"this run's {what} are dropped until an export succeeds",
                file=sys.stderr,
            )
        self._failing = True
        return False

    def _trouble(self, error: OSError | ValueError) -> str:
        """What went wrong with a request, in words, with what to do where that is clear."""
        if isinstance(error, ConnectionRefusedError):
            return (
                "connection refused, no collector is listening there (start an OTLP/HTTP "
                "collector, or set OTEL_EXPORTER_OTLP_ENDPOINT to one)"
            )
        if isinstance(error, socket.gaierror):
            return f"cannot resolve the host {self._host!r} (check OTEL_EXPORTER_OTLP_ENDPOINT)"
        if isinstance(error, TimeoutError):
            return (
                f"no answer within {self.timeout:g} s (OTEL_EXPORTER_OTLP_TIMEOUT sets how long "
                "an export may take)"
            )
        if isinstance(error, OSError) and error.strerror:
            return error.strerror[:1].lower() + error.strerror[1:]
        return str(error) or type(error).__name__

    def _post(self, body: bytes, timeout: float) -> tuple[int, str, float | None]:
        if self._connection is None:
            self._connection = Connection(self._host, self._port, self._context)
        return self._connection.post(self._head, body, timeout)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class Connection:
    """One kept-alive HTTP/1.1 connection to a collector, for POSTs: `post` sends one and
    returns the answer's status, reason and `retry-after` seconds, its body read and
    dropped. OSError when the connection fails, ValueError for an answer not in HTTP."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext | None) -> None:
        self.host, self.port, self.context = host, port, context
        self._socket: socket.socket | None = None
        self._held = b""  # what was read past the answer before

    def post(self, head: bytes, body: bytes, timeout: float) -> tuple[int, str, float | None]:
        """`head` is the request line and headers (each ending in CRLF), without a length."""
        if self._socket is None:
            sock = socket.create_connection((self.host, self.port), timeout)
            if self.context is not None:
                sock = self.context.wrap_socket(sock, server_hostname=self.host)
            self._socket, self._held = sock, b""
        self._socket.settimeout(timeout)
        self._socket.sendall(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        lines = self._until(b"\r\n\r\n").split(b"\r\n")
        version, _, rest = lines[0].partition(b" ")
        code, _, reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/") or not code.isdigit():
            raise ValueError(f"not an HTTP answer: {lines[0][:60]!r}")
        status = int(code)
        fields: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            fields[name.strip().lower()] = value.strip()
        closing = fields.get(b"connection", b"").lower() == b"close" or (
            version == b"HTTP/1.0" and fields.get(b"connection", b"").lower() != b"keep-alive"
        )
        if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
            self._chunks()
        elif b"content-length" in fields:
            self._exactly(int(fields[b"content-length"]))
        elif status >= 200 and status not in (204, 304):
            self._to_close()  # a body without a length ends with the connection
            closing = True
        if closing:
            self.close()
        retry_after: float | None = None
        try:
            retry_after = max(0.0, float(fields.get(b"retry-after") or b""))
        except ValueError:
            pass  # absent, or an HTTP date: the backoff applies
        return status, reason.decode("latin-1"), retry_after

    def _read(self) -> bytes:
        assert self._socket is not None
        chunk = self._socket.recv(65536)
        if not chunk:
            raise ConnectionResetError("the collector closed the connection")
        return chunk

    def _until(self, end: bytes) -> bytes:
        """The bytes before `end` (taken with it)."""
        held = self._held
        while end not in held:
            if len(held) > 1 << 16:
                raise ValueError("an HTTP answer's head over 64 KiB")
            held += self._read()
        taken, _, self._held = held.partition(end)
        return taken

    def _exactly(self, size: int) -> None:
        held = self._held
        while len(held) < size:
            held += self._read()
        self._held = held[size:]

    def _chunks(self) -> None:
        while True:
            size = int(self._until(b"\r\n").partition(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self._until(b"\r\n"):  # trailers, up to the blank line
                    pass
                return
            self._exactly(size + 2)  # the chunk and its CRLF

    def _to_close(self) -> None:
        try:
            while True:
                self._read()
        except ConnectionResetError:
            return

    def close(self) -> None:
        if self._socket is not None:
            try:
                self._socket.close()
            finally:
                self._socket, self._held = None, b""


def _backoff(attempt: int) -> float:
    """Seconds to wait before try `attempt + 2`: 1, 2, 4... with 20 % jitter."""
    import random  # only when a retry waits: the helper starts without it

    return float(2**attempt * random.uniform(0.8, 1.2))
