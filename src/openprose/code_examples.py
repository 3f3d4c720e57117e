"""A wrong and a right program for every diagnostic code, as `prose explain CODE` shows them.

`prose check` of ``wrong`` reports the code; of ``right`` it does not (tests/openprose/
test_code_examples.py checks both, for every code). ``files`` are the other files of the
example's folder (an imported program). ``repeat`` makes the program checked that many copies
of ``wrong`` (a limit on how much is reported); ``shown`` is what is printed instead of a
``wrong`` too long or not text. E118's wrong program is a file that is not there: `prose
check` says so on stderr (exit 2), `openprose.check_file` returns the E118 diagnostic.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Example:
    wrong: str | bytes
    right: str
    files: dict[str, str] = field(default_factory=dict)
    repeat: int = 1
    shown: str | None = None

    @property
    def wrong_text(self) -> str:
        """``wrong`` as printed."""
        if self.shown is not None:
            return self.shown
        assert isinstance(self.wrong, str)  # bytes always come with `shown`
        return self.wrong

    def wrong_source(self) -> bytes:
        """The bytes `prose check` is given for ``wrong``."""
        data = self.wrong if isinstance(self.wrong, bytes) else self.wrong.encode("utf-8")
        return data * self.repeat


_RESEARCH = {
    "research.prose": (
        'input topic: "What to research"\n'
        'output findings = session "Research {topic}"\n'
        'output sources = session "List the sources on {topic}"\n'
    )
}
_USE = 'use "./research.prose" as research\n'
_SEARCH = 'use "@anthropic/web-search"\n'
_LONG = "Review the change for errors. " * 345  # 10,005 characters

_GRABBER = (
    "agent grabber:\n"
    '  prompt: "You collect"\n'
    "  permissions:\n"
    "    bash: allow\n"
    "\n"
    "output loot = session: grabber\n"
    '  prompt: "Collect the notes"\n'
)
_GRABBER_SHA = hashlib.sha256(_GRABBER.encode("utf-8")).hexdigest()
# `@mallory/grab` as `prose install` leaves it in the import cache, and the same program as
# a local file (a local import has no cap).
_GRAB = {
    "prose.toml": "# the project: its .prose/ holds the import cache\n",
    ".prose/imports/index.json": (
        '{"@mallory/grab": {"origin": "https://registry.example/@mallory/grab", '
        f'"sha256": "{_GRABBER_SHA}"}}}}\n'
    ),
    f".prose/imports/{_GRABBER_SHA}.prose": _GRABBER,
    "grab.prose": _GRABBER,
}

EXAMPLES: dict[str, Example] = {
    # --- the reference's errors ---
    "E001": Example('session "Hello\n', 'session "Hello"\n'),
    "E002": Example('session "a\\qb"\n', 'session "a\\nb"\n'),
    "E003": Example("let x = session\n", 'let x = session "Do it"\n'),
    "E004": Example('session "A" "B"\n', 'session "A"\nsession "B"\n'),
    "E005": Example("session:\n", "agent a:\n  model: opus\nsession: a\n"),
    "E006": Example(
        "agent writer:\n  model: opus\nagent writer:\n  model: haiku\n",
        "agent writer:\n  model: opus\nagent editor:\n  model: haiku\n",
    ),
    "E007": Example("session: ghost\n", "agent ghost:\n  model: haiku\nsession: ghost\n"),
    "E008": Example("agent writer:\n  model: gpt4\n", "agent writer:\n  model: sonnet\n"),
    "E009": Example(
        "agent writer:\n  model: opus\n  model: haiku\n",
        'agent writer:\n  model: opus\n  prompt: "You write"\n',
    ),
    "E010": Example(
        'use "@alice/research"\nuse "@alice/research"\n',
        'use "@alice/research"\nuse "@alice/critique"\n',
    ),
    "E011": Example('use ""\n', 'use "@alice/research"\n'),
    "E012": Example('use "@alice"\n', 'use "@alice/research"\n'),
    "E013": Example(
        _SEARCH + 'agent a:\n  skills: "web-search"\n',
        _SEARCH + 'agent a:\n  skills: ["web-search"]\n',
    ),
    "E014": Example(
        _SEARCH + "agent a:\n  skills: [web-search]\n",
        _SEARCH + 'agent a:\n  skills: ["web-search"]\n',
    ),
    "E015": Example(
        'agent a:\n  permissions: "all"\n', "agent a:\n  permissions:\n    bash: deny\n"
    ),
    "E016": Example(
        "agent a:\n  permissions:\n    read: [docs]\n",
        'agent a:\n  permissions:\n    read: ["docs/*.md"]\n',
    ),
    "E017": Example(
        "agent captain:\n  model: opus\nsession: captain\nresume: captain\n",
        "agent captain:\n  model: opus\n  persist: true\nsession: captain\nresume: captain\n",
    ),
    "E018": Example(
        "agent captain:\n  persist: true\nresume: captain\n",
        "agent captain:\n  persist: true\nsession: captain\nresume: captain\n",
    ),
    "E019": Example(
        'let result = session "Outer"\nfor item in ["a"]:\n  let result = session "Inner"\n',
        'let result = session "Outer"\nfor item in ["a"]:\n  let inner = session "Inner"\n',
    ),
    "E020": Example('input : "The subject"\n', 'input topic: "The subject"\n'),
    "E021": Example(
        'input topic: "The subject"\ninput topic: "Again"\n',
        'input topic: "The subject"\ninput depth: "How deep"\n',
    ),
    "E022": Example(
        'session "Start"\ninput topic: "The subject"\n',
        'input topic: "The subject"\nsession "Start"\n',
    ),
    "E023": Example('output = session "Synthesize"\n', 'output findings = session "Synthesize"\n'),
    "E024": Example(
        'output findings = session "A"\noutput findings = session "B"\n',
        'output findings = session "A"\noutput sources = session "B"\n',
    ),
    "E025": Example(
        'let result = research(topic: "quantum")\n',
        _USE + 'let result = research(topic: "quantum")\n',
        _RESEARCH,
    ),
    "E026": Example(
        _USE + "let result = research()\n",
        _USE + 'let result = research(topic: "quantum")\n',
        _RESEARCH,
    ),
    "E027": Example(
        _USE + 'let result = research(topic: "q", depth: "deep")\n',
        _USE + 'let result = research(topic: "q")\n',
        _RESEARCH,
    ),
    "E028": Example(
        _USE + 'let result = research(topic: "q")\nsession "Write"\n  context: result.summary\n',
        _USE + 'let result = research(topic: "q")\nsession "Write"\n  context: result.findings\n',
        _RESEARCH,
    ),
    # --- the reference's warnings ---
    "W001": Example('session ""\n', 'session "Say hello"\n'),
    "W002": Example('session "   "\n', 'session "Say hello"\n'),
    "W003": Example(
        f'session "{_LONG}"\n',
        'session "Review the change for errors."\n',
        shown=f'session "{_LONG[:60]}… (10,005 characters)"\n',
    ),
    "W004": Example('agent writer:\n  prompt: ""\n', 'agent writer:\n  prompt: "You write"\n'),
    "W005": Example('session "A"\n  temperature: 1\n', 'session "A"\n  retry: 1\n'),
    "W006": Example('use "https://example.com/x.txt"\n', 'use "@example/x"\n'),
    "W007": Example(
        'agent a:\n  skills: ["web-search"]\n', _SEARCH + 'agent a:\n  skills: ["web-search"]\n'
    ),
    "W008": Example(
        "agent a:\n  permissions:\n    email: deny\n",
        "agent a:\n  permissions:\n    network: deny\n",
    ),
    "W009": Example(
        "agent a:\n  permissions:\n    bash: maybe\n",
        "agent a:\n  permissions:\n    bash: prompt\n",
    ),
    "W010": Example(
        "agent a:\n  skills: []\n", 'use "@a/search"\nagent a:\n  skills: ["search"]\n'
    ),
    "W011": Example(
        "agent captain:\n  persist: true\nsession: captain\nsession: captain\n",
        "agent captain:\n  persist: true\nsession: captain\nresume: captain\n",
    ),
    # --- ours: scanner and parser ---
    "E100": Example(
        b'session "Caf\xe9"\n',
        'session "Café"\n',
        shown='session "Caf\\xe9"   (byte 0xE9: é saved as Latin-1, not UTF-8)\n',
    ),
    "E101": Example(
        'if **the tests pass**:\n\tsession "Ship it"\n',
        'if **the tests pass**:\n  session "Ship it"\n',
        shown='if **the tests pass**:\n<TAB>session "Ship it"\n',
    ),
    "E102": Example('session "A" $\n', 'session "A"\n'),
    "E103": Example(
        'if **the tests pass**:\n    session "Ship it"\n  session "Tell the team"\n',
        'if **the tests pass**:\n  session "Ship it"\n  session "Tell the team"\n',
    ),
    "E104": Example(
        'session "Write the draft"\n  session "Review it"\n',
        'session "Write the draft"\nsession "Review it"\n',
    ),
    "E105": Example(
        'try:\nsession "Risky"\ncatch:\n  session "Recover"\n',
        'try:\n  session "Risky"\ncatch:\n  session "Recover"\n',
    ),
    "E106": Example('session """Write a poem\n"""\n', 'session """\nWrite a poem\n"""\n'),
    "E107": Example(
        'if **the tests pass:\n  session "Ship it"\n',
        'if **the tests pass**:\n  session "Ship it"\n',
    ),
    "E108": Example(
        'if ***\n  the tests pass\n  and the docs are written\n:\n  session "Ship it"\n',
        'if ***\n  the tests pass\n  and the docs are written\n***:\n  session "Ship it"\n',
    ),
    "E109": Example(
        'let items = ["a", "b"\nsession "Go"\n', 'let items = ["a", "b"]\nsession "Go"\n'
    ),
    "E110": Example(
        'session "A"\nelif **the other case holds**:\n  session "B"\n',
        'if **the first case holds**:\n  session "A"\nelif **the other case holds**:\n'
        '  session "B"\n',
    ),
    "E111": Example(
        'session "A"\nelse:\n  session "B"\n',
        'if **the first case holds**:\n  session "A"\nelse:\n  session "B"\n',
    ),
    "E112": Example(
        'if **the first case holds**:\n  session "A"\nelse:\n  session "B"\nelse:\n  session "C"\n',
        'if **the first case holds**:\n  session "A"\nelse:\n  session "B"\n',
    ),
    "E113": Example(
        'session "Risky"\ncatch:\n  session "Recover"\n',
        'try:\n  session "Risky"\ncatch:\n  session "Recover"\n',
    ),
    "E114": Example(
        'option "Fast":\n  session "Go fast"\n',
        'choice **the best approach**:\n  option "Fast":\n    session "Go fast"\n',
    ),
    "E115": Example(
        "".join("  " * level + "do:\n" for level in range(1001)) + "  " * 1001 + 'session "A"\n',
        'do:\n  do:\n    session "A"\n',
        shown="do:\n  do:\n    do:\n      … (1,001 levels of `do:`)\n",
    ),
    "E116": Example('"Write a poem"\n', 'session "Write a poem"\n'),
    "E117": Example(
        'session "A" $\n',
        'session "A"\n',
        repeat=1200,
        shown='session "A" $\n… (the same line 1,200 times: an error on each)\n',
    ),
    "E118": Example(
        "",
        'session "A"\n',
        shown="(a program file that cannot be read: missing, a broken link, a device)\n",
    ),
    "E119": Example(
        'try:\n  session "Risky"\nfinally:\n  session "Clean up"\ncatch:\n  session "Recover"\n',
        'try:\n  session "Risky"\ncatch:\n  session "Recover"\nfinally:\n  session "Clean up"\n',
    ),
    "E120": Example(
        'let xs = ["a"]\nlet out = xs | sort:\n  session "S"\n',
        'let xs = ["a"]\nlet out = xs | map:\n  session "S"\n',
    ),
    "E121": Example(
        'let xs = ["a"]\nlet out = xs | reduce:\n  session "S"\n',
        'let xs = ["a"]\nlet out = xs | reduce(acc, x):\n  session "S"\n    context: [acc, x]\n',
    ),
    "E122": Example(
        f'repeat {"9" * 1001}:\n  session "Idea"\n',
        'repeat 3:\n  session "Idea"\n',
        shown='repeat 99999…9:   (1,001 digits)\n  session "Idea"\n',
    ),
    "E123": Example('import "research" from "@alice/research"\n', 'use "@alice/research"\n'),
    "W100": Example('repeat 3:\nsession "Idea"\n', 'repeat 3:\n  session "Idea"\n'),
    # --- ours: checker ---
    "E140": Example("let copy = draft\n", 'let draft = session "Draft"\nlet copy = draft\n'),
    "E141": Example(
        'let name = session "Ask the name"\nsession "Hello {nme}, welcome"\n',
        'let name = session "Ask the name"\nsession "Hello {name}, welcome"\n',
    ),
    "E142": Example(
        'session "Summarize"\n  context: research\n',
        'let research = session "Research"\nsession "Summarize"\n  context: research\n',
    ),
    "E143": Example(
        'let a = session "A"\nsession "Combine"\n  context: [a, "b"]\n',
        'let a = session "A"\nlet b = session "B"\nsession "Combine"\n  context: [a, b]\n',
    ),
    "E144": Example(
        'const config = session "Get config"\nconfig = session "Change"\n',
        'let config = session "Get config"\nconfig = session "Change"\n',
    ),
    "E145": Example(
        'agent writer:\n  model: opus\nlet writer = session "Write"\n',
        'agent writer:\n  model: opus\nlet draft = session "Write"\n',
    ),
    "E146": Example(
        'let raw = session "Research"\noutput raw = session "Synthesize"\n',
        'let raw = session "Research"\noutput findings = session "Synthesize"\n  context: raw\n',
    ),
    "E147": Example(
        'use "@alice/research"\nuse "@bob/research"\n',
        'use "@alice/research"\nuse "@bob/research" as bob-research\n',
    ),
    "E148": Example("do checks\n", 'do checks\nblock checks:\n  session "Check syntax"\n'),
    "E149": Example(
        'block checks:\n  session "A"\nblock checks:\n  session "B"\n',
        'block checks:\n  session "A"\nblock reviews:\n  session "B"\n',
    ),
    "E150": Example(
        'agent review:\n  model: opus\nblock review:\n  session "A"\n',
        'agent reviewer:\n  model: opus\nblock review:\n  session "A"\n',
    ),
    "E151": Example('block :\n  session "A"\n', 'block checks:\n  session "A"\n'),
    "E152": Example(
        'parallel ("fastest"):\n  session "A"\n  session "B"\n',
        'parallel ("first"):\n  session "A"\n  session "B"\n',
    ),
    "E153": Example(
        'parallel (on-fail: "retry"):\n  session "A"\n',
        'parallel (on-fail: "continue"):\n  session "A"\n',
    ),
    "E154": Example(
        'parallel ("first", count: 1):\n  session "A"\n  session "B"\n',
        'parallel ("any", count: 1):\n  session "A"\n  session "B"\n',
    ),
    "E155": Example(
        'parallel ("any", count: 0):\n  session "A"\n',
        'parallel ("any", count: 1):\n  session "A"\n',
    ),
    "E156": Example('repeat 0:\n  session "Idea"\n', 'repeat 3:\n  session "Idea"\n'),
    "E157": Example('repeat 2.5:\n  session "Idea"\n', 'repeat 2:\n  session "Idea"\n'),
    "E158": Example(
        'for fruit in fruits:\n  session "Describe"\n',
        'let fruits = ["apple"]\nfor fruit in fruits:\n  session "Describe"\n',
    ),
    "E159": Example('loop (max: 0):\n  session "Next"\n', 'loop (max: 1):\n  session "Next"\n'),
    "E160": Example('loop (max: 2.5):\n  session "Next"\n', 'loop (max: 2):\n  session "Next"\n'),
    "E161": Example(
        'loop until **  ** (max: 3):\n  session "Next"\n',
        'loop until **the task is complete** (max: 3):\n  session "Next"\n',
    ),
    "E162": Example(
        'try:\n  session "Risky"\n',
        'try:\n  session "Risky"\nfinally:\n  session "Clean up"\n',
    ),
    "E163": Example('session "API"\n  retry: 0\n', 'session "API"\n  retry: 1\n'),
    "E164": Example('session "API"\n  retry: 1.5\n', 'session "API"\n  retry: 2\n'),
    "E165": Example(
        'session "API"\n  retry: 3\n  backoff: random\n',
        'session "API"\n  retry: 3\n  backoff: exponential\n',
    ),
    "E166": Example(
        'choice **the best approach**:\n  session "A"\n',
        'choice **the best approach**:\n  option "A":\n    session "A"\n',
    ),
    "E167": Example("agent captain:\n  persist: forever\n", "agent captain:\n  persist: project\n"),
    "E168": Example(
        'parallel (timeout: 5):\n  session "A"\n',
        'parallel (on-fail: "continue"):\n  session "A"\n',
    ),
    "E169": Example(
        _USE + 'let result = research(topic: "a", topic: "b")\n',
        _USE + 'let result = research(topic: "a")\n',
        _RESEARCH,
    ),
    "E170": Example('use "./missing.prose" as helper\n', _USE, _RESEARCH),
    "E171": Example(
        'use "./broken.prose" as broken\n',
        'use "./fixed.prose" as fixed\n',
        {"broken.prose": 'session "Unclosed\n', "fixed.prose": 'session "Closed"\n'},
    ),
    "E180": Example(
        'let review = session "Review"\n  returns:\n    title: strng\n',
        'let review = session "Review"\n  returns:\n    title: string\n',
    ),
    "E181": Example(
        'let review = session "Review"\n  returns:\n    title: string\n'
        'session "Fix {review.titel}"\n',
        'let review = session "Review"\n  returns:\n    title: string\n'
        'session "Fix {review.title}"\n',
    ),
    "E190": Example(
        'let go = ask "Ship it?"\n  options: "yes or no"\n',
        'let go = ask "Ship it?"\n  options: ["yes", "no"]\n',
    ),
    "E191": Example(
        'let go = ask "Ship it?"\n  options: ["yes", "no"]\n  default: "maybe"\n',
        'let go = ask "Ship it?"\n  options: ["yes", "no"]\n  default: "no"\n',
    ),
    "E192": Example(
        'let go = ask "Ship it?"\n  default: "no"\n  timeout: "a while"\n',
        'let go = ask "Ship it?"\n  default: "no"\n  timeout: "10m"\n',
    ),
    "W140": Example('input topic: ""\n', 'input topic: "The subject to research"\n'),
    "W141": Example(
        'block review(topic):\n  session "Review {topic}"\ndo review("a", "b")\n',
        'block review(topic):\n  session "Review {topic}"\ndo review("a")\n',
    ),
    "W142": Example(
        'let topic = session "Pick"\nblock review(topic):\n  session "Review {topic}"\n',
        'let topic = session "Pick"\nblock review(subject):\n  session "Review {subject}"\n',
    ),
    "W143": Example(
        'parallel ("any", count: 3):\n  session "A"\n  session "B"\n',
        'parallel ("any", count: 2):\n  session "A"\n  session "B"\n',
    ),
    "W144": Example(
        'let item = session "outer"\nfor item in ["a", "b"]:\n  session "Process"\n'
        "    context: item\n",
        'let item = session "outer"\nfor each in ["a", "b"]:\n  session "Process"\n'
        "    context: each\n",
    ),
    "W145": Example('loop:\n  session "Next"\n', 'loop (max: 50):\n  session "Next"\n'),
    "W146": Example(
        'loop until **done** (max: 3):\n  session "Next"\n',
        'loop until **all tests pass** (max: 3):\n  session "Next"\n',
    ),
    "W147": Example(
        'let item = session "outer"\nlet items = ["a"]\nlet out = items | map:\n'
        '  session "P"\n    context: item\n',
        'let thing = session "outer"\nlet items = ["a"]\nlet out = items | map:\n'
        '  session "P"\n    context: item\n',
    ),
    "W148": Example(
        'let err = session "A"\ntry:\n  session "Risky"\ncatch as err:\n  session "Log"\n',
        'let e = session "A"\ntry:\n  session "Risky"\ncatch as err:\n  session "Log"\n',
    ),
    "W149": Example('throw ""\n', 'throw "Precondition failed"\n'),
    "W150": Example('session "API"\n  retry: 11\n', 'session "API"\n  retry: 10\n'),
    "W151": Example(
        "agent caller:\n  retry: 3\n",
        "agent caller:\n  model: haiku\nsession: caller\n  retry: 3\n",
    ),
    "W152": Example(
        'choice **the best approach**:\n  option "A":\n    session "A"\n  option "A":\n'
        '    session "B"\n',
        'choice **the best approach**:\n  option "A":\n    session "A"\n  option "B":\n'
        '    session "B"\n',
    ),
    "W153": Example(
        'choice **the best approach**:\n  option "A":\n    # to do\n  option "B":\n'
        '    session "B"\n',
        'choice **the best approach**:\n  option "A":\n    session "A"\n',
    ),
    "W154": Example(
        'if **the system is healthy**:\n  # nothing to do yet\nelse:\n  session "B"\n',
        'if **the system is healthy**:\n  session "A"\n',
    ),
    "W155": Example(
        'session ""\n',
        'session "Say hello"\n',
        repeat=1200,
        shown='session ""\n… (the same line 1,200 times: a warning on each)\n',
    ),
    "W156": Example(
        'if **the answer is needed**:\n  let answer = session "Answer"\nsession "Use it"\n'
        "  context: answer\n",
        'let answer = ""\nif **the answer is needed**:\n  answer = session "Answer"\n'
        'session "Use it"\n  context: answer\n',
    ),
    "W170": Example(
        'session "API"\n  retry: 3\n  backoff: "exponential"\n',
        'session "API"\n  retry: 3\n  backoff: exponential\n',
    ),
    "W171": Example(
        'let name = session "Ask the name"\nsession "Hello {{name}}"\n',
        'let name = session "Ask the name"\nsession "Hello {name}"\n',
    ),
    "W180": Example(
        'use "@mallory/grab" as grab\noutput r = grab()\n',
        'use "./grab.prose" as grab\noutput r = grab()\n',
        _GRAB,
    ),
    "W181": Example(
        'agent a:\n  permissions:\n    mcp: ["note"]\nsession: a\n  prompt: "Look it up"\n',
        'agent a:\n  permissions:\n    mcp: ["notes"]\nsession: a\n  prompt: "Look it up"\n',
        {"prose.toml": '[mcp.servers.notes]\ncommand = "notes-server"\n'},
    ),
    "W190": Example(
        'let go = ask "Ship it?"\n  choices: ["yes", "no"]\n',
        'let go = ask "Ship it?"\n  options: ["yes", "no"]\n',
    ),
    "W191": Example('let go = ask ""\n', 'let go = ask "Ship it?"\n'),
    "W192": Example(
        'let go = ask "Ship it?"\n  options: ["yes", "no", "yes"]\n',
        'let go = ask "Ship it?"\n  options: ["yes", "no"]\n',
    ),
    # --- notes ---
    "I001": Example(
        "agent captain:\n  persist: user\nresume: captain\n",
        "agent captain:\n  persist: true\nsession: captain\nresume: captain\n",
    ),
    "I002": Example(
        'use "@alice/research" as research\nlet result = research(topic: "q")\n',
        _USE + 'let result = research(topic: "q")\n',
        _RESEARCH,
    ),
}
