"""Agent Skills: a folder with a `SKILL.md` whose YAML front matter names the skill and says
what it is for; the instructions follow the front matter; scripts and resources sit beside."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Skill",
    "SkillError",
    "load_skill",
    "skill_folder_name",
    "skill_kind",
    "skill_search_paths",
    "skill_uses",
]

SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class SkillError(ValueError):
    """A skill folder that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    instructions: str
    folder: Path
    sha256: str = ""  # of SKILL.md, journaled so a run records which text it used

    def listing(self) -> str:
        return f"- {self.name}: {self.description}"

    def to_event(self) -> dict[str, str]:
        """What the journal keeps of a loaded skill: enough to use the same text on resume."""
        return {
            "name": self.name,
            "description": self.description,
            "instructions": self.instructions,
            "folder": str(self.folder),
            "sha256": self.sha256,
        }

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> Skill:
        return cls(
            str(event["name"]),
            str(event["description"]),
            str(event["instructions"]),
            Path(str(event["folder"])),
            str(event.get("sha256", "")),
        )


def load_skill(folder: Path) -> Skill:
    path = folder / SKILL_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SkillError(f"{path}: cannot read the skill ({exc.strerror})") from None
    match = FRONT_MATTER.match(text)
    if match is None:
        raise SkillError(
            f"{path}:1: SKILL.md must start with YAML front matter between `---` lines "
            f"holding `name:` and `description:`"
        )
    import yaml  # type: ignore[import-untyped,unused-ignore]

    try:
        meta: Any = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise SkillError(f"{path}: the front matter is not valid YAML ({exc})") from None
    if not isinstance(meta, dict):
        raise SkillError(f"{path}: the front matter must be a mapping with name and description")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise SkillError(
            f"{path}: `name` must be lower-case letters, digits and hyphens (got {name!r})"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{path}: `description` must say what the skill does and when to use it")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Skill(name, " ".join(description.split()), text[match.end() :].strip(), folder, digest)


def skill_search_paths(spec: str, base: Path, project_dir: Path) -> list[Path]:
    """Where `use "SPEC"` may find a skill folder: a local path (relative to the program),
    else where `prose install` / `prose run` put a registry or URL skill
    (`.prose/skills/{scope}--{name}`, see `skill_folder_name`), then
    `.prose/skills/{name}` (a folder put there by hand)."""
    installed = project_dir / ".prose" / "skills"
    candidates = []
    if skill_kind(spec) == "path":
        candidates.append((base / spec).resolve())
    else:
        candidates.append(installed / skill_folder_name(spec))
    name = spec.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    if name and not name.startswith("."):
        candidates.append(installed / name)
    return candidates


def skill_kind(spec: str) -> str:
    """`url` (http:// or https://), `path` (a folder: `./x`, `../x`, `/x`, `~/x`, or a bare
    name), else `registry` (`@scope/name`, `scope/name`)."""
    if re.match(r"^https?://", spec):
        return "url"
    if spec.startswith(("./", "../", "/", "~")) or "/" not in spec.strip("/"):
        return "path"
    return "registry"


def skill_folder_name(spec: str) -> str:
    """`.prose/skills/{this}` for a registry or URL spec: `scope--name`, or
    `url--{name}-{hash}` for a URL (the hash keeps two URLs ending alike apart)."""
    if skill_kind(spec) == "url":
        tail = spec.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        for suffix in (".zip", ".tar.gz", ".tgz", ".tar", ".md"):
            tail = tail.removesuffix(suffix)
        digest = hashlib.sha256(spec.encode("utf-8")).hexdigest()[:10]
        return f"url--{_safe(tail) or 'skill'}-{digest}"
    scope, _, name = spec.lstrip("@").partition("/")
    return f"{_safe(scope)}--{_safe(name)}"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip(".-")


def skill_uses(program: Any) -> dict[str, str]:
    """A program's `use` statements by the name an agent's `skills:` would give them: the
    alias, and the spec's last segment (`use "@scope/web-search"` -> `web-search`)."""
    from openprose import nodes as n

    uses: dict[str, str] = {}
    for stmt in program.body:
        if isinstance(stmt, n.Use):
            spec = stmt.path.value
            slug = spec.rstrip("/").rsplit("/", 1)[-1].removesuffix(".prose")
            uses[stmt.alias.id if stmt.alias else slug] = spec
            uses.setdefault(slug, spec)
    return uses


def resolve_skills(
    uses: dict[str, str], wanted: set[str], base_dir: Path, project_dir: Path
) -> tuple[dict[str, Skill], list[str]]:
    """The skills agents name, found through the program's `use` statements (name -> spec),
    and one problem line for each that cannot be loaded (the agent then goes without it)."""
    found: dict[str, Skill] = {}
    problems: list[str] = []
    for name in sorted(wanted):
        spec = uses.get(name)
        if spec is None:
            problems.append(f'skill {name!r} is not imported (W007): add `use "PATH/{name}"`')
            continue
        folders = [f for f in skill_search_paths(spec, base_dir, project_dir) if f.is_dir()]
        if not folders:
            places = ", ".join(str(p) for p in skill_search_paths(spec, base_dir, project_dir))
            problems.append(f"skill {name!r} ({spec}) not found; looked in: {places}")
            continue
        try:
            found[name] = load_skill(folders[0])
        except SkillError as error:
            problems.append(str(error))
    return found, problems
