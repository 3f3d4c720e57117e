"""Resolve `use` specs to programs, and keep what was fetched so re-runs and resumes work offline.

A spec is a local path (`lib/research.prose`), an `http(s)://` URL, or a registry name
(`@handle/slug` or `handle/slug`, fetched from `{registry}/@handle/slug`, registry default
https://p.prose.md, or `PROSE_REGISTRY`). Every program text is cached content-addressed under
`.prose/imports/{sha256}.prose`, and `.prose/imports/index.json` maps each spec to its latest
hash; a run records the hashes it used, so resuming it reads exactly those texts.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from openprose.contracts import ContractLookup, ProgramContract, contract_of, is_local_path
from openprose.files import write_atomically
from openprose.locks import locked

DEFAULT_REGISTRY = "https://p.prose.md"
CACHE_DIR = Path(".prose") / "imports"
FETCH_TIMEOUT_S = 30.0


class ImportFailed(Exception):
    """A `use` could not be resolved (not found, offline with nothing cached, or broken)."""


@dataclass(frozen=True, slots=True)
class Fetched:
    spec: str
    text: str
    sha256: str
    origin: str  # the file path or URL it came from


def kind_of(spec: str) -> str:
    if spec.startswith(("http://", "https://")):
        return "url"
    if is_local_path(spec):
        return "path"
    return "registry"


def namespace_of(spec: str) -> str:
    """`imports/{handle}--{slug}/` folder name for a spec."""
    kind = kind_of(spec)
    if kind == "path":
        return f"local--{Path(spec).stem}"
    parts = [p for p in spec.split("://", 1)[-1].strip("/").split("/") if p]
    if kind == "url":
        parts = parts[1:] or parts  # drop the host
    tail = [p.lstrip("@").removesuffix(".prose") for p in parts[-2:]]
    return "--".join(tail) if len(tail) == 2 else f"url--{tail[0]}"


def default_name(spec: str) -> str:
    """The name a program is called by without `as`: its slug."""
    return spec.rstrip("/").rsplit("/", 1)[-1].removesuffix(".prose")


def registry_url(spec: str, registry: str) -> str:
    handle, _, slug = spec.lstrip("@").partition("/")
    return f"{registry.rstrip('/')}/@{handle}/{slug}"


class ImportCache:
    def __init__(self, project_dir: Path) -> None:
        self.folder = project_dir / CACHE_DIR
        self._index_path = self.folder / "index.json"

    def _index(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self._index_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def store(self, fetched: Fetched) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        body = self.folder / f"{fetched.sha256}.prose"
        if not body.exists():
            write_atomically(body, fetched.text)

        # Read, update and write the index under its lock: two runs storing imports at
        # once each keep the other's entries.
        with locked(self._index_path.with_suffix(".lock")):
            index = self._index()
            index[fetched.spec] = {"sha256": fetched.sha256, "origin": fetched.origin}
            text = json.dumps(index, indent=2, sort_keys=True) + "\n"
            write_atomically(self._index_path, text)

    def by_hash(self, sha256: str) -> str | None:
        """The cached text stored under `sha256`; None when missing. A file whose content no
        longer has that hash (edited by hand, damaged on disk) raises `ImportFailed`: a
        resume must run the program the run started with, or nothing."""
        path = self.folder / f"{sha256}.prose"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            raise ImportFailed(f"{path}: cannot read the cached program ({error})") from None
        actual = sha256_of(text)
        if actual != sha256:
            raise ImportFailed(
                f"{path}: the cached program was changed since it was fetched (its sha256 is "
                f"now {actual[:12]}, not {sha256[:12]}); restore it, or start a new run"
            )
        return text

    def latest(self, spec: str) -> Fetched | None:
        entry = self._index().get(spec)
        if entry is None:
            return None
        text = self.by_hash(entry["sha256"])
        return (
            None if text is None else Fetched(spec, text, entry["sha256"], entry.get("origin", ""))
        )


def sha256_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fetch(
    spec: str,
    *,
    base_dir: Path | None,
    cache: ImportCache,
    registry: str | None = None,
    pinned: str | None = None,
    offline: bool = False,
) -> Fetched:
    """The program text for `spec`: the pinned hash from the cache when given (resume), else
    a local file, else the network (falling back to the cache when offline or unreachable)."""
    if pinned is not None:
        text = cache.by_hash(pinned)
        if text is None:
            raise ImportFailed(
                f"{spec}: cached program {pinned[:12]} is missing from {cache.folder}"
            )
        return Fetched(spec, text, pinned, "cache")
    kind = kind_of(spec)
    if kind == "path":
        file = Path(spec) if Path(spec).is_absolute() or base_dir is None else base_dir / spec
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ImportFailed(f"{spec}: cannot read {file}: {error}") from None
        fetched = Fetched(spec, text, sha256_of(text), str(file))
        cache.store(fetched)
        return fetched
    url = spec if kind == "url" else registry_url(spec, registry or _registry())
    if offline:
        cached = cache.latest(spec)
        if cached is None:
            raise ImportFailed(f"{spec}: not cached, and fetching is off")
        return cached
    try:
        text = _http_get(url)
    except ImportFailed:
        cached = cache.latest(spec)
        if cached is not None:
            return cached
        raise
    fetched = Fetched(spec, text, sha256_of(text), url)
    cache.store(fetched)
    return fetched


def _registry() -> str:
    return os.environ.get("PROSE_REGISTRY", DEFAULT_REGISTRY)


def _http_get(url: str) -> str:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Accept": "text/plain"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as answer:
            data: bytes = answer.read()
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise ImportFailed(f"cannot fetch {url}: {error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportFailed(f"{url} is not UTF-8 text") from None


def cache_contracts(project_dir: Path) -> ContractLookup:
    """A `ContractLookup` for the checker that reads local files and the import cache only."""
    cache = ImportCache(project_dir)

    def lookup(spec: str, base_dir: Path | None) -> ProgramContract | None:
        from openprose.parser import parse_text

        if kind_of(spec) == "path":
            from openprose.contracts import local_contracts

            return local_contracts(spec, base_dir)
        try:
            cached = cache.latest(spec)
        except ImportFailed:  # a damaged cache entry: the run reports it; the check defers
            return None
        if cached is None:
            return None
        return contract_of(parse_text(cached.text, cached.origin or spec).program)

    return lookup
