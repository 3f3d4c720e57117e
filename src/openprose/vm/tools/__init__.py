"""What lets a session act: built-in tools, the permissions that bound them, the sandbox
for shell commands, approvals for `prompt`, and skills. The tool loop that drives them
lives in `openprose.vm.toolloop`."""

from openprose.vm.tools.approvals import (
    ApprovalPending,
    ApprovalRequest,
    Approver,
    NobodyApprover,
    PreApprover,
    RecordedApprover,
    TerminalApprover,
)
from openprose.vm.tools.permissions import Permissions
from openprose.vm.tools.sandbox import Sandbox, SandboxUnavailable, sandbox_problem
from openprose.vm.tools.skills import Skill, SkillError, load_skill
from openprose.vm.tools.toolbox import Toolbox, ToolLimits, ToolOutcome

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
