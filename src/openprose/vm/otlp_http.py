"""OTLP/HTTP requests for the export helper, configured the standard way.

The SDK's `OTLPSpanExporter` imports requests, urllib3 and the protobuf runtime: ~0.15 s of
CPU at the start of every traced run, as much as exporting 20,000 spans with
`openprose.vm.otlp`. This sender uses the standard library's `http.client` (one kept-alive
connection) and reads the settings the SDK reads, with the SDK's meaning:

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
"""

from __future__ import annotations

import http.client
import random
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource

RETRYABLE = frozenset({429, 502, 503, 504})
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


def setting(env: Mapping[str, str], name: str, default: str = "") -> str:
    """`OTEL_EXPORTER_OTLP_TRACES_{name}`, else `OTEL_EXPORTER_OTLP_{name}`."""
    return (
        env.get(f"OTEL_EXPORTER_OTLP_TRACES_{name}")
        or env.get(f"OTEL_EXPORTER_OTLP_{name}")
        or default
    )


def endpoint(env: Mapping[str, str]) -> str:
    own = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if own:
        return own
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"
    return f"{base.removesuffix('/')}/v1/traces"


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
    """POSTs serialized `ExportTraceServiceRequest`s to the configured endpoint."""

    def __init__(self, env: Mapping[str, str], user_agent: str = "openprose") -> None:
        self.url = endpoint(env)
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the OTLP endpoint {self.url!r} is not an http(s) URL")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            self.timeout = float(setting(env, "TIMEOUT") or DEFAULT_TIMEOUT)
        except ValueError:
            self.timeout = DEFAULT_TIMEOUT
        self.compression = setting(env, "COMPRESSION", "none").strip().lower()
        if self.compression not in ("gzip", "deflate", "none"):
            self.compression = "none"
        self.headers = {"content-type": "application/x-protobuf", "user-agent": user_agent}
        self.headers.update(headers(setting(env, "HEADERS")))
        if self.compression != "none":
            self.headers.setdefault("content-encoding", self.compression)
        self._context = None
        if self._https:
            import ssl

            self._context = ssl.create_default_context(cafile=setting(env, "CERTIFICATE") or None)
            certificate = setting(env, "CLIENT_CERTIFICATE")
            if certificate:
                self._context.load_cert_chain(certificate, setting(env, "CLIENT_KEY") or None)
        self._connection: http.client.HTTPConnection | None = None
        self._failing = False  # the last request was not delivered

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
            wait = 2**attempt * random.uniform(0.8, 1.2)
            try:
                status, reason, retry_after = self._post(body, left)
            except (OSError, http.client.HTTPException) as error:
                self.close()
                problem = f"{type(error).__name__}: {error}"
                if attempt == 0:
                    continue  # a kept-alive connection the server closed: once more at once
            else:
                if 200 <= status < 300:
                    self._failing = False
                    return True
                problem = f"HTTP {status} {reason}"
                if status not in RETRYABLE:
                    break
                if retry_after is not None:
                    wait = retry_after
            if wait >= deadline - time.monotonic():
                break
            time.sleep(wait)
        print(f"prose: spans not exported to {self.url}: {problem}", file=sys.stderr)
        self._failing = True
        return False

    def _post(self, body: bytes, timeout: float) -> tuple[int, str, float | None]:
        if self._connection is None:
            if self._https:
                self._connection = http.client.HTTPSConnection(
                    self._host, self._port, timeout=timeout, context=self._context
                )
            else:
                self._connection = http.client.HTTPConnection(
                    self._host, self._port, timeout=timeout
                )
        else:
            self._connection.timeout = timeout
            if self._connection.sock is not None:
                self._connection.sock.settimeout(timeout)
        self._connection.request("POST", self._path, body, self.headers)
        answer = self._connection.getresponse()
        answer.read()
        retry_after: float | None = None
        try:
            retry_after = max(0.0, float(answer.getheader("retry-after") or ""))
        except ValueError:
            pass  # absent, or an HTTP date: the backoff applies
        return answer.status, answer.reason, retry_after

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
