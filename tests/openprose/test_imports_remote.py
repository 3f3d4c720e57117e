"""Issue 17, items 2 and 3: remote imports are confined, pinned in prose.lock, refused over
plain http to another machine, bounded in size and total time, and a fallback to the cache
is said out loud."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprose.imports import FetchPolicy, ImportFailed
from openprose.parser import parse_text
from openprose.vm.loader import load_imports

LIBRARY = 'input topic: "what"\noutput findings = session "Research {topic}"\n'


class Site:
    """A loopback web server: `pages` maps a path to a body, or to "drip" / "endless"."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.hits: list[str] = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.hits.append(self.path)
                page = site.pages.get(self.path)
                if page is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                if page in ("drip", "endless"):
                    self.end_headers()
                    try:
                        while True:  # one byte at a time, or a flood, never ending
                            self.wfile.write(b"#" if page == "drip" else b"#" * 65536)
                            self.wfile.flush()
                            if page == "drip":
                                time.sleep(0.2)
                    except OSError:
                        return
                body = page.encode()
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def site() -> Iterator[Site]:
    served = Site()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


def load(spec: str, project: Path, **options: object) -> dict[str, object]:
    program = parse_text(f'use "{spec}" as lib\nlet r = lib(topic: "x")\n', "main.prose").program
    return load_imports(program, base_dir=project, project_dir=project, **options)  # type: ignore[arg-type]


# --- item 2: confinement -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('agent a:\n  persist: "/tmp/elsewhere"\n', 'memory at "/tmp/elsewhere"'),
        ('agent a:\n  persist: "../outside"\n', 'memory at "../outside"'),
        ('agent a:\n  persist: "~/notes"\n', 'memory at "~/notes"'),
        ("agent a:\n  persist: user\n", "`persist: user`"),
        ('use "/etc/secret.prose" as s\n', 'may not import the local file "/etc/secret.prose"'),
        ('use "lib/helper.prose"\n', 'may not import the local file "lib/helper.prose"'),
        ('use "../../.ssh"\n', 'may not import the local file "../../.ssh"'),  # a skill folder
        ('use "/etc"\n', 'may not import the local file "/etc"'),
    ],
)
def test_a_remote_program_is_confined(site: Site, tmp_path: Path, body: str, expected: str) -> None:
    site.pages["/lib.prose"] = body + LIBRARY
    with pytest.raises(ImportFailed, match="remote program") as caught:
        load(f"{site.base}/lib.prose", tmp_path)
    assert expected in str(caught.value)
    assert f"{site.base}/lib.prose:" in str(caught.value)  # where in the program


def test_a_remote_program_may_keep_memory_in_the_run_or_project(site: Site, tmp_path: Path) -> None:
    site.pages["/lib.prose"] = (
        'agent a:\n  persist: true\nagent b:\n  persist: project\nagent c:\n  persist: "notes"\n'
        + LIBRARY
    )
    assert "lib" in load(f"{site.base}/lib.prose", tmp_path)


def test_a_local_program_may_still_persist_anywhere(tmp_path: Path) -> None:
    (tmp_path / "lib.prose").write_text('agent a:\n  persist: "/tmp/x"\n' + LIBRARY)
    assert "lib" in load("lib.prose", tmp_path)


# --- item 2: plain http, pins, fallback ---------------------------------------------------


def test_plain_http_to_another_machine_is_refused_before_any_request(tmp_path: Path) -> None:
    with pytest.raises(ImportFailed, match=r"refusing plain http://.*allow_http = true"):
        load("http://example.invalid/lib.prose", tmp_path)


def test_a_remote_program_is_pinned_and_a_change_is_an_error(site: Site, tmp_path: Path) -> None:
    url = f"{site.base}/lib.prose"
    site.pages["/lib.prose"] = LIBRARY
    load(url, tmp_path)
    pins = json.loads((tmp_path / "prose.lock").read_text())["imports"]
    assert pins[url]["url"] == url and len(pins[url]["sha256"]) == 64
    # The pinned text is used from the cache: no request.
    site.pages["/lib.prose"] = LIBRARY + 'output more = session "changed"\n'
    load(url, tmp_path)
    assert site.hits == ["/lib.prose"]
    # Without the cached copy, the changed remote is an error...
    for cached in (tmp_path / ".prose" / "imports").glob("*.prose"):
        cached.unlink()
    with pytest.raises(ImportFailed, match="changed since it was pinned in prose.lock"):
        load(url, tmp_path)
    # ...until the user accepts it.
    loaded = load(url, tmp_path, policy=FetchPolicy(update_pins=True))
    assert "changed" in loaded["lib"].text  # type: ignore[attr-defined]
    assert json.loads((tmp_path / "prose.lock").read_text())["imports"][url] != pins[url]


def test_falling_back_to_the_cache_is_said(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{site.base}/lib.prose"
    site.pages["/lib.prose"] = LIBRARY
    load(url, tmp_path, policy=FetchPolicy(update_pins=True))
    site.pages.clear()  # the server now answers 404
    loaded = load(url, tmp_path, policy=FetchPolicy(update_pins=True))
    assert loaded["lib"].text == LIBRARY  # type: ignore[attr-defined]
    err = capsys.readouterr().err
    assert "warning" in err and "HTTP 404" in err and "using the copy cached" in err


# --- item 3: bounded downloads ------------------------------------------------------------


def test_an_endless_body_stops_at_the_size_cap_and_leaves_nothing(
    site: Site, tmp_path: Path
) -> None:
    site.pages["/big.prose"] = "endless"
    with pytest.raises(ImportFailed, match="larger than 65,536 bytes"):
        load(f"{site.base}/big.prose", tmp_path, policy=FetchPolicy(max_bytes=65536))
    cached = tmp_path / ".prose" / "imports"
    assert not cached.exists() or not any(cached.glob("*.prose"))


def test_a_dripping_server_is_cut_off_by_the_total_timeout(site: Site, tmp_path: Path) -> None:
    site.pages["/slow.prose"] = "drip"
    started = time.monotonic()
    with pytest.raises(ImportFailed, match="no complete answer within 1 s"):
        load(f"{site.base}/slow.prose", tmp_path, policy=FetchPolicy(timeout=1.0))
    assert time.monotonic() - started < 5


def test_import_limits_are_read_from_prose_toml(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from openprose.cli import main

    monkeypatch.chdir(tmp_path)
    site.pages["/lib.prose"] = LIBRARY
    (tmp_path / "main.prose").write_text(
        f'use "{site.base}/lib.prose" as lib\nlet r = lib(topic: "x")\n'
    )
    (tmp_path / "rules.yaml").write_text('default: "ok"\n')
    (tmp_path / "prose.toml").write_text("[imports]\nmax_bytes = 10\n")
    assert main(["run", "main.prose", "--provider", "scripted:rules.yaml"]) == 2
    assert "larger than 10 bytes" in capsys.readouterr().err
    (tmp_path / "prose.toml").write_text("[imports]\ntimeout = -1\n")
    assert main(["run", "main.prose", "--provider", "scripted:rules.yaml"]) == 2
    assert "[imports] timeout must be a positive number" in capsys.readouterr().err
