"""The header snippet (system prompt text) that teaches a model VPP."""

from __future__ import annotations

from importlib.resources import files

from vpp.versions import DEFAULT_VERSION, Version, check_version


def header_snippet(version: Version | str = DEFAULT_VERSION) -> str:
    """The protocol's own header snippet for `version`, ready to use as a system prompt."""
    checked = check_version(version)
    return (files("vpp") / f"header-snippet-v{checked}.txt").read_text(encoding="utf-8")
