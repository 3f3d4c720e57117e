"""Telemetry of runs: spans (`spans`: what the VM asks of a tracer; `otel`: the
OpenTelemetry tracer), their OTLP encoding (`otlp`) and sending (`otlp_http`), and the
helper process that exports them (`export`). Nothing here imports the VM, the CLI, the
session layer or the providers: the VM hands a tracer what it needs.

This package's `__init__` imports nothing: the export helper starts with it.
"""
