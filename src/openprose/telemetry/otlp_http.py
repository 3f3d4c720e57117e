"""OTLP/HTTP requests for the export helper, configured the standard way.

The SDK's `OTLPSpanExporter` imports requests, urllib3 and the protobuf runtime: ~0.15 s of
CPU at the start of every traced run, as much as exporting 20,000 spans with
`openprose.telemetry.otlp`; the standard library's `http.client` still costs the helper ~20 ms
(the `email` package, `ssl`). This sender posts through `openprose.net.blocking`, the loop-less
client over the same HTTP/1.1 code as the providers' transport (llhttp's parser and its limits,
the errors of `net.errors`, TLS defaults, the environment's HTTPS_PROXY / HTTP_PROXY /
NO_PROXY), over one kept-alive socket, and reads the settings the SDK reads, with the SDK's
meaning:

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
from urllib.parse import unquote

from openprose.net.blocking import BlockingClient
from openprose.net.endpoints import env_proxy
from openprose.net.errors import CannotConnect, HttpFailure

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
        https = self.url.lower().startswith("https://")
        if not https and not self.url.lower().startswith("http://"):
            raise ValueError(f"the OTLP endpoint {self.url!r} is not an http(s) URL")
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
        context: ssl.SSLContext | None = None
        if https:
            import ssl

            cafile = setting(env, "CERTIFICATE", signal=signal) or None
            context = ssl.create_default_context(cafile=cafile)
            certificate = setting(env, "CLIENT_CERTIFICATE", signal=signal)
            if certificate:
                key = setting(env, "CLIENT_KEY", signal=signal) or None
                context.load_cert_chain(certificate, key)
        try:
            self._client = BlockingClient("POST", self.url, self.headers, ssl_context=context)
        except ValueError as problem:
            raise ValueError(f"the OTLP endpoint {self.url!r}: {problem}") from None
        self._refusal = ""  # why nothing can be sent (a proxy setting we cannot use)
        proxy = env_proxy(self.url)  # honoured, as the SDK's exporter (requests) did
        if proxy:
            try:
                self._client = BlockingClient(
                    "POST", self.url, self.headers, proxy=proxy, ssl_context=context
                )
            except ValueError as problem:  # said once by `send`, as any failed export is
                self._refusal = f"{problem} (set in HTTPS_PROXY / HTTP_PROXY)"
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
        problem = self._refusal
        for attempt in range(0 if self._refusal else 1 if self._failing else TRIES):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                answer = self._client.send(body, left)
            except (HttpFailure, TimeoutError) as error:
                problem = self._trouble(error)
                if _unreachable(error) and not self._reached:
                    break  # nothing has ever answered there: waiting would only delay the end
                if attempt == 0:
                    continue  # a kept-alive connection the server closed: once more at once
                wait = _backoff(attempt)
            else:
                self._reached = True
                status, reason = answer.head.status, answer.head.reason
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
                retry_after = _seconds(answer.head.headers.get("retry-after"))
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

    def _trouble(self, error: HttpFailure | TimeoutError) -> str:
        """What went wrong with a request, in words, with what to do where that is clear."""
        cause = error.__cause__ if isinstance(error, CannotConnect) else None
        if isinstance(cause, ConnectionRefusedError):
            return (
                "connection refused, no collector is listening there (start an OTLP/HTTP "
                "collector, or set OTEL_EXPORTER_OTLP_ENDPOINT to one)"
            )
        if isinstance(cause, socket.gaierror):
            return (
                f"cannot resolve the host {self._client.host!r} (check OTEL_EXPORTER_OTLP_ENDPOINT)"
            )
        if isinstance(error, TimeoutError):
            return (
                f"no answer within {self.timeout:g} s (OTEL_EXPORTER_OTLP_TIMEOUT sets how long "
                "an export may take)"
            )
        return str(error) or type(error).__name__

    def close(self) -> None:
        self._client.close()


def _unreachable(error: Exception) -> bool:
    """A connection that could not be opened at all (refused, or no such host)."""
    return isinstance(error, CannotConnect) and isinstance(error.__cause__, UNREACHABLE)


def _seconds(retry_after: str | None) -> float | None:
    """A `retry-after` in seconds; None when absent or an HTTP date (the backoff applies)."""
    try:
        return max(0.0, float(retry_after or ""))
    except ValueError:
        return None


def _backoff(attempt: int) -> float:
    """Seconds to wait before try `attempt + 2`: 1, 2, 4... with 20 % jitter."""
    import random  # only when a retry waits: the helper starts without it

    return float(2**attempt * random.uniform(0.8, 1.2))
