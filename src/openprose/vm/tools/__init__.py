"""What lets a session act: built-in tools, the permissions that bound them, the sandbox
for shell commands, approvals for `prompt`, and skills. The tool loop that drives them
lives in `openprose.vm.toolloop`."""

from importlib import import_module
from typing import Any

# name -> its module; loaded on first use, so that importing one light module of the package
# (approvals, permissions, skills) does not load the toolbox, the sandbox and the web tool.
_HOMES = {
    **dict.fromkeys(
        (
            "ApprovalPending",
            "ApprovalRequest",
            "Approver",
            "NobodyApprover",
            "PreApprover",
            "RecordedApprover",
            "TerminalApprover",
        ),
        "approvals",
    ),
    "Permissions": "permissions",
    **dict.fromkeys(("Sandbox", "SandboxUnavailable", "sandbox_problem"), "sandbox"),
    **dict.fromkeys(("Skill", "SkillError", "load_skill"), "skills"),
    **dict.fromkeys(("Toolbox", "ToolLimits", "ToolOutcome"), "toolbox"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)


__all__ = [
    "ApprovalPending",
    "ApprovalRequest",
    "Approver",
    "NobodyApprover",
    "Permissions",
    "PreApprover",
    "RecordedApprover",
    "Sandbox",
    "SandboxUnavailable",
    "Skill",
    "SkillError",
    "TerminalApprover",
    "ToolLimits",
    "ToolOutcome",
    "Toolbox",
    "load_skill",
    "sandbox_problem",
]
