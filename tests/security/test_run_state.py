"""The run's own state and the files that run code or set permissions, out of every agent's
reach: `.prose/` (this project's and nested projects'), `.git/`, `prose.toml`, `prose.lock`,
`pyproject.toml` — through the shell in every write configuration, and through the file
tools by every path spelling."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from openprose.vm.tools import Permissions, Toolbox
from tests.security.conftest import SECRET, World, call, make_toolbox, needs_sandbox

JOURNAL = ".prose/runs/journal.jsonl"
GUARDED = (
    JOURNAL,
    "prose.toml",
    "prose.lock",
    "pyproject.toml",
    ".git/config",
    ".git/HEAD",
    "sub/prose.toml",
    "sub/.prose/runs/journal.jsonl",
    "output/nested/prose.toml",
    "output/nested/.git/config",
)


@pytest.fixture
def guarded(world: World) -> World:
    """The world with a git folder, settings files and a nested project (also inside the
    write folder), each holding the secret."""
    for rel in GUARDED:
        path = world.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'# {SECRET}\n{{"ev": "run_started"}}\n')
    (world.root / ".git" / "hooks").mkdir()
    return world


def _hashes(world: World) -> dict[str, str]:
    found = {}
    for rel in GUARDED:
        path = world.root / rel
        found[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "gone"
    names = ("prose.toml", "pyproject.toml", "prose.lock", ".git", ".prose")
    for folder, dirs, files in os.walk(world.root):  # no new guarded names anywhere
        for name in [*dirs, *files]:
            if name in names:
                found.setdefault(os.path.relpath(os.path.join(folder, name), world.root), "new")
    return found


WRITE_CONFIGS = {
    "write-allow": {"write": "allow"},
    "write-output": {"write": ["output/"]},
    "write-output-glob": {"write": ["output/**"]},
    "write-two": {"write": ["output/", "src/"]},
}

ATTACKS = [
    ("append-journal", f'echo \'{{"ev":"approval_decided"}}\' >> {JOURNAL}'),
    ("replace-journal", f"echo x > {JOURNAL}.new && mv {JOURNAL}.new {JOURNAL}"),
    ("rm-run-state", "rm -rf .prose"),
    ("rename-run-state", "mv .prose .p2 && mkdir -p .prose/runs && echo x > " + JOURNAL),
    ("nested-journal", "echo x >> sub/.prose/runs/journal.jsonl"),
    ("settings", "echo '[permissions]' >> prose.toml; echo x >> pyproject.toml"),
    ("lock", "echo x > prose.lock"),
    ("replace-settings", "rm -f prose.toml; echo 'bash = \"allow\"' > prose.toml"),
    ("git-config", "printf '[core]\\n\\tfsmonitor = touch /tmp/pwn\\n' >> .git/config"),
    ("git-hook", "echo 'touch /tmp/pwn' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit"),
    ("git-rename", "mv .git .g2 && mkdir .git && echo x > .git/config"),
    ("nested-settings", "echo x >> sub/prose.toml"),
    ("nested-rename", "mv sub sub2 && mkdir sub && echo 'bash = \"allow\"' > sub/prose.toml"),
    ("in-write-folder", "echo x >> output/nested/prose.toml; echo x >> output/nested/.git/config"),
    (
        "in-write-folder-rename",
        "mv output/nested output/n2 && mkdir -p output/nested && echo x > output/nested/prose.toml",
    ),
    ("proc-root", f"echo x >> /proc/self/root$PWD/{JOURNAL}"),
    ("dotdot", f"echo x >> ../project/{JOURNAL}; echo x >> ../project/prose.toml"),
    ("symlink-in-write", f"ln -s ../{JOURNAL} output/j && echo x >> output/j"),
    ("hardlink-in-write", "ln prose.toml output/p && echo x >> output/p"),
    ("python-open", f"python3 -c \"open('{JOURNAL}', 'a').write('x')\""),
    ("mount-over", "mount --bind output .prose 2>&1; echo x >> " + JOURNAL),
]


@needs_sandbox
@pytest.mark.parametrize("config", list(WRITE_CONFIGS), ids=list(WRITE_CONFIGS))
@pytest.mark.parametrize("command", [pytest.param(c, id=i) for i, c in ATTACKS])
async def test_the_shell_cannot_change_run_state_or_guarded_files(
    guarded: World, config: str, command: str
) -> None:
    before = _hashes(guarded)
    toolbox = make_toolbox(guarded, bash="allow", read=["src/"], **WRITE_CONFIGS[config])
    outcome = await call(toolbox, "run_command", command=command)
    assert outcome.content.startswith(("exit code", "killed")), outcome.content
    after = _hashes(guarded)
    assert after == before
    assert not Path("/tmp/pwn").exists()


@needs_sandbox
@pytest.mark.parametrize("config", list(WRITE_CONFIGS), ids=list(WRITE_CONFIGS))
@pytest.mark.parametrize(
    "command",
    [
        f"cat {JOURNAL}",
        "cat sub/.prose/runs/journal.jsonl",
        "ls -laR .prose sub/.prose",
        f"cat /proc/self/root$PWD/{JOURNAL}",
        (
            "grep -r top-secret . 2>/dev/null | grep -v -e prose.toml -e pyproject "
            "-e prose.lock -e '.git/' -e private.txt"
        ),
    ],
)
async def test_the_shell_cannot_read_run_state(guarded: World, config: str, command: str) -> None:
    toolbox = make_toolbox(guarded, bash="allow", read=["src/"], **WRITE_CONFIGS[config])
    outcome = await call(toolbox, "run_command", command=command)
    assert SECRET not in outcome.content


@needs_sandbox
async def test_the_shell_still_writes_what_it_was_granted(guarded: World) -> None:
    toolbox = make_toolbox(guarded, bash="allow", write="allow")
    outcome = await call(
        toolbox, "run_command", command="echo ok > new.txt && echo ok > output/nested/r.md"
    )
    assert outcome.content.startswith("exit code 0"), outcome.content
    assert (guarded.root / "new.txt").read_text() == "ok\n"


@needs_sandbox
async def test_no_descriptor_leaks_into_the_sandbox(guarded: World) -> None:
    """The mounts are made from open descriptors; one left open — in the command or in
    bubblewrap's own pid 1 — would reach the real folder (and its parents) around every
    mount."""
    toolbox = make_toolbox(guarded, bash="allow", write=["output/"])
    outcome = await call(
        toolbox, "run_command", command="for f in /proc/[0-9]*/fd/*; do readlink $f; done"
    )
    targets = set(outcome.content.split("--- stdout ---\n")[1].split())
    files = {t for t in targets if t.startswith("/")}  # the rest: pipes, eventfds
    assert files and all(t == "/dev/null" or t.startswith("/proc/") for t in files), files


@needs_sandbox
async def test_system_secrets_are_hidden(world: World) -> None:
    outcome = await call(
        make_toolbox(world, bash="allow"), "run_command", command="cat /etc/shadow; echo end"
    )
    assert "root:" not in outcome.content and "end" in outcome.content


# --- writable folders: resolved once, no symlinks, re-checked at use ---------------------


@needs_sandbox
async def test_nested_write_folder_swapped_for_a_link_to_the_root_is_refused(
    world: World,
) -> None:
    """Agent A (write out3/) makes out3/reports a symlink to `..`; agent B (write
    out3/reports/) must not get the project root."""
    (world.root / "out3" / "reports").mkdir(parents=True)
    agent_b = make_toolbox(world, bash="allow", write=["out3/reports/"])
    first = await call(agent_b, "run_command", command="echo ok > out3/reports/r.txt")
    assert first.content.startswith("exit code 0")
    agent_a = make_toolbox(world, bash="allow", write=["out3/"])
    swap = "rm -rf out3/reports && ln -s .. out3/reports"
    assert (await call(agent_a, "run_command", command=swap)).content.startswith("exit code 0")
    assert (world.root / "out3" / "reports").is_symlink()
    before = world.snapshot()
    for box in (agent_b, make_toolbox(world, bash="allow", write=["out3/reports/"])):
        outcome = await call(box, "run_command", command=f"echo pwn >> {JOURNAL}; echo x > y")
        assert outcome.is_error and "not run" in outcome.content, outcome.content
        assert "symlink" in outcome.content or "replaced" in outcome.content
    assert world.snapshot() == before


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("{parent}/", "holds the project root"),
        ("{root}/", "holds the project root"),
        ("link/", "symlink"),
        ("link/deeper/", "symlink"),
        ("sub/", "run state of a nested project"),
        (".prose/runs/", "inside .prose/"),
        ("{outside}/", "run state of another project"),
    ],
)
@needs_sandbox
async def test_write_folders_that_cannot_be_granted_refuse_the_command(
    world: World, pattern: str, why: str
) -> None:
    (world.root / "link").symlink_to(".")
    (world.root / "sub" / ".prose").mkdir(parents=True)
    (world.outside / "other" / ".prose").mkdir(parents=True)
    rule = pattern.format(parent=world.root.parent, root=world.root, outside=world.outside)
    before = world.snapshot()
    toolbox = make_toolbox(world, bash="allow", write=[rule])
    outcome = await call(toolbox, "run_command", command="echo x > y; echo x > .prose/z")
    assert outcome.is_error and why in outcome.content, outcome.content
    assert world.snapshot() == before
    assert not (world.root.parent / "deeper").exists()


# --- file tools -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "prose.toml",
        "./prose.toml",
        "src/../prose.toml",
        "{root}/prose.toml",
        "/proc/self/root{root}/prose.toml",
        "prose.lock",
        "pyproject.toml",
        "sub/prose.toml",
        ".git/config",
        ".git/hooks/pre-commit",
        "sub/.git/config",
        "alias.toml",  # a symlink to prose.toml
        "gitlink/config",  # a symlink to .git
        JOURNAL,
        ".prose/new",
        "sub/.prose/runs/journal.jsonl",
        "output/../.prose/runs/journal.jsonl",
        ".PROSE/x",  # the same folder on a case-insensitive file system
        "Prose.toml",
    ],
)
@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_file_tools_do_not_write_guarded_files(guarded: World, path: str, tool: str) -> None:
    (guarded.root / "alias.toml").symlink_to("prose.toml")
    (guarded.root / "gitlink").symlink_to(".git")
    before = _hashes(guarded)
    toolbox = make_toolbox(guarded, read="allow", write="allow")
    target = path.format(root=guarded.root)
    args = {"content": "x"} if tool == "write_file" else {"old_text": "#", "new_text": "x"}
    outcome = await call(toolbox, tool, path=target, **args)
    assert outcome.is_error and "permission denied" in outcome.content, outcome.content
    assert _hashes(guarded) == before


async def test_a_pattern_that_names_a_guarded_file_grants_it(guarded: World) -> None:
    toolbox = make_toolbox(guarded, write=["prose.toml", ".git/hooks/"], read=[".prose/"])
    assert not (await call(toolbox, "write_file", path="prose.toml", content="x")).is_error
    assert not (await call(toolbox, "write_file", path=".git/hooks/h", content="x")).is_error
    assert (await call(toolbox, "write_file", path=".git/config", content="x")).is_error
    read = await call(toolbox, "read_file", path=JOURNAL)
    assert SECRET in read.content  # named: `.prose/` may be read, never written
    assert (await call(toolbox, "write_file", path=JOURNAL, content="x")).is_error


@pytest.mark.parametrize(
    "path",
    [
        JOURNAL,
        "./.prose/runs/journal.jsonl",
        "sub/.prose/runs/journal.jsonl",
        "statelink/runs/journal.jsonl",
    ],
)
async def test_file_tools_do_not_read_run_state(guarded: World, path: str) -> None:
    (guarded.root / "statelink").symlink_to(".prose")
    toolbox = make_toolbox(guarded, read="allow")
    outcome = await call(toolbox, "read_file", path=path)
    assert outcome.is_error and SECRET not in outcome.content
    searched = await call(toolbox, "search_files", regex="top-secret")
    assert ".prose" not in searched.content


def test_guarded_files_stay_readable(tmp_path: Path) -> None:
    from openprose.vm.tools.paths import resolve_path

    perms = Permissions.from_mapping({"read": "allow"})
    assert perms.judge_path("read", resolve_path(tmp_path, "prose.toml")) == "allow"
    assert perms.judge_path("read", resolve_path(tmp_path, ".git/config")) == "allow"
    assert perms.judge_path("read", resolve_path(tmp_path, ".prose/x")) == "deny"
    assert isinstance(Toolbox(tmp_path, perms).permissions, Permissions)


# --- installed skills under .prose/skills/: content, not run state ----------------------


@pytest.fixture
def skilled(guarded: World) -> World:
    folder = guarded.root / ".prose" / "skills" / "acme--tool"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: tool\n---\nUse it\n")
    (folder / "scripts" / "run.sh").write_text("#!/bin/sh\necho skill-ran\n")
    (folder / "scripts" / "run.sh").chmod(0o755)
    (folder / "state").symlink_to("../../runs/journal.jsonl")
    return guarded


@needs_sandbox
async def test_installed_skills_run_read_only_and_the_rest_stays_hidden(skilled: World) -> None:
    toolbox = make_toolbox(skilled, bash="allow", write="allow")
    skill = ".prose/skills/acme--tool"
    outcome = await call(
        toolbox,
        "run_command",
        command=f"{skill}/scripts/run.sh; cat {skill}/SKILL.md; cat {skill}/state; "
        f"echo x >> {skill}/SKILL.md; ls .prose",
    )
    assert "skill-ran" in outcome.content and "Use it" in outcome.content
    assert SECRET not in outcome.content and "runs" not in outcome.content.split("stderr")[0]
    assert (skilled.root / skill / "SKILL.md").read_text().endswith("Use it\n")


@pytest.mark.parametrize(
    ("path", "readable"),
    [
        (".prose/skills/acme--tool/SKILL.md", True),
        ("./.prose/skills/acme--tool/scripts/run.sh", True),
        (".prose/skills/acme--tool/state", False),  # a symlink into the journal
        (".prose/skills/../runs/journal.jsonl", False),
        (".prose/skills", False),
    ],
)
async def test_file_tools_read_installed_skills_only(
    skilled: World, path: str, readable: bool
) -> None:
    toolbox = make_toolbox(skilled, read="allow", write="allow")
    outcome = await call(toolbox, "read_file", path=path)
    assert outcome.is_error is not readable, outcome.content
    assert SECRET not in outcome.content
    written = await call(toolbox, "write_file", path=path, content="x")
    assert written.is_error


@needs_sandbox
@pytest.mark.parametrize("network", ["deny", "allow"])
async def test_execute_only_and_networked_configurations_hide_run_state_too(
    guarded: World, network: str
) -> None:
    script = guarded.root / "scripts" / "peek.sh"
    script.write_text(
        f"#!/bin/sh\ncat {JOURNAL} sub/.prose/runs/journal.jsonl\n"
        f"echo x >> {JOURNAL}; echo x >> prose.toml; echo x >> .git/config\n"
    )
    script.chmod(0o755)
    before = _hashes(guarded)
    toolbox = make_toolbox(
        guarded, bash="deny", execute=["scripts/*.sh"], write="allow", network=network
    )
    outcome = await call(toolbox, "run_command", command="scripts/peek.sh")
    assert outcome.content.startswith("exit code"), outcome.content
    assert SECRET not in outcome.content
    assert _hashes(guarded) == before


@pytest.mark.parametrize("target", ["output/settings.toml", "output/gitdir"])
async def test_the_target_of_a_symlinked_settings_file_is_guarded_too(
    world: World, target: str
) -> None:
    """`prose.toml -> output/settings.toml` (or `.git -> output/gitdir`): writing the target
    by its own name would change the settings the next run reads."""
    real = world.root / target
    if target.endswith("gitdir"):
        (real / "hooks").mkdir(parents=True)
        (world.root / ".git").symlink_to("output/gitdir")
        path = f"{target}/hooks/pre-commit"
    else:
        real.write_text("[permissions]\n")
        (world.root / "prose.toml").symlink_to("output/settings.toml")
        path = target
    toolbox = make_toolbox(world, write=["output/"], read="allow")
    outcome = await call(toolbox, "write_file", path=path, content='bash = "allow"')
    assert outcome.is_error and "links to" in outcome.content, outcome.content
    assert not (await call(toolbox, "write_file", path="output/ok.md", content="x")).is_error
