"""Protocol compliance of the embedded model (issue 15): VLP answers, VPP replies, PLSP cycles.

For each protocol the same model answers the same prompts in one run through the
package's runtime (`vlp.ask`: schema-constrained decoding and one re-ask; `vpp.session`:
frame in the prompt, mechanical repair, bounded re-ask; the PLSP middleware with the
cycle grammar and its one re-ask) and unconstrained (the protocol's instructions alone;
for PLSP the same middleware and re-ask, without a grammar, and with the syntax-only block
grammar). Greedy decoding (temperature 0) and prompts from fixed lists or a fixed seed,
so the figures repeat. Reports the shares, the 1-minute load average and PASS/FAIL
against the issue's goals; exits 0.

    .venv/bin/python bench/protocol_compliance.py [--prompts 50] [--only vlp|vpp|plsp]
        [--show N]   # print the replies of the first N PLSP cycles of each variant
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

SUBJECTS = [
    "the boiling point of water",
    "the capital of Australia",
    "how many legs a spider has",
    "what photosynthesis produces",
    "who wrote Hamlet",
    "the speed of light",
    "the largest planet in the solar system",
    "why the sky is blue",
    "what a prime number is",
    "the chemical symbol for gold",
]
QUESTIONS = [
    "What is {}?",
    "Tell me about {}.",
    "Is this true: {} is well known?",
    "Explain {} in one sentence.",
    "How sure are you about {}?",
]
VPP_SCRIPT = ["!<g>\n{}", "!<q>\nWhat should I ask about {}?", "!<c>\nCritique your answer.",
              "!<o>\nSummarise {}.", "!<e> --<g>\nStart over on {}."]  # fmt: skip


def prompts(template_sets: list[str], count: int) -> list[str]:
    pairs = [(t, s) for t in template_sets for s in SUBJECTS]
    return [pairs[i % len(pairs)][0].format(pairs[i % len(pairs)][1]) for i in range(count)]


async def bench_vlp(provider: object, count: int) -> tuple[float, float, float]:
    from openprose.providers.base import Message, ModelRequest
    from vlp import ask as asking

    valid = first = baseline = 0
    for question in prompts(QUESTIONS, count):
        answer = await asking.ask_async(provider, question, model="local", temperature=0.0)  # type: ignore[arg-type]
        valid += answer.ok
        first += answer.ok and len(answer.attempts) == 1
        plain = ModelRequest(
            model="local",
            messages=(Message("user", asking._question_text(question, "claim", ())),),
            system=asking.SYSTEM,
            max_tokens=asking.DEFAULT_MAX_TOKENS,
            temperature=0.0,
        )
        reply = (await provider.complete(plain)).text  # type: ignore[attr-defined]
        message, problems = asking._read(reply, asking._Envelope("claim", "local", None, None))
        baseline += message is not None and not problems
    return valid / count, first / count, baseline / count


async def bench_vpp(provider: object, count: int) -> tuple[float, float, float]:
    from openprose.providers.base import Message, ModelRequest
    from vpp import header_snippet, initial_state, validate_exchange
    from vpp.session import Session

    ok = first = baseline = 0
    done = 0
    for subject in SUBJECTS * (count // len(SUBJECTS) + 1):
        if done >= count:
            break
        session = Session(provider, "1.5", model="local", temperature=0.0, max_tokens=160)  # type: ignore[arg-type]
        state = initial_state("1.5")
        history: list[Message] = []
        for template in VPP_SCRIPT:
            if done >= count:
                break
            user = template.format(subject)
            turn = await session.send_async(user)
            ok += turn.ok
            first += turn.first_try_ok
            history.append(Message("user", user))
            request = ModelRequest(
                model="local",
                messages=tuple(history),
                system=header_snippet("1.5"),
                max_tokens=160,
                temperature=0.0,
            )
            reply = (await provider.complete(request)).text  # type: ignore[attr-defined]
            result = validate_exchange(user, reply, state)
            baseline += result.ok
            state = result.next_state
            history.append(Message("assistant", reply))
            done += 1
    return ok / count, first / count, baseline / count


PLSP_SEED = 15
WORDS = ["op", "run", "ok", "idle", "hot", "cold", "west", "disk full"]


def plsp_cycles(count: int, seed: int = PLSP_SEED) -> list[tuple[str, str]]:
    """`count` (INSTR:, previous block) pairs of the kinds a monitoring loop sends:
    sets, updates (also from another variable), deletions, signals, decidable `@if`s and
    now and then an `@fetch` whose value only the model can give."""
    rng = random.Random(seed)

    def literal() -> str:
        kind = rng.random()
        if kind < 0.45:
            return str(rng.randint(0, 120))
        if kind < 0.6:
            return f"{rng.randint(0, 99)}.{rng.randint(1, 9)}"
        return f'"{rng.choice(WORDS)}"'

    cycles = []
    for _ in range(count):
        names = rng.sample("abcdefghklmnpqrtuvwxyz", rng.randint(1, 4))
        state = {name: literal() for name in names}
        numeric = [n for n, v in state.items() if not v.startswith('"')]
        spare = [c for c in "bcdfgjkmsz" if c not in state]
        directives = []
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            target = rng.choice(names)
            if kind < 0.25:
                directives.append(f"@set:${rng.choice(spare)}={literal()}")
            elif kind < 0.5:
                source = f"${rng.choice(names)}" if rng.random() < 0.3 else literal()
                directives.append(f"@upd:${target}={source}")
            elif kind < 0.58 and len(names) > 1:
                directives.append(f"@del:${target}")
                names.remove(target)
                numeric = [n for n in numeric if n != target]
            elif kind < 0.75:
                directives.append(
                    rng.choice(
                        [
                            f"@sig:!wait,{rng.randint(1, 20) * 100}",
                            f'@sig:!page,${target},"{rng.choice(WORDS)}"',
                            f'@sig:>"{rng.choice(WORDS)}",${target}',
                        ]
                    )
                )
            elif kind < 0.92 and numeric:
                var = rng.choice(numeric)
                directives.append(
                    f"@if:${var}>{rng.randint(0, 120)}?@sig:!page,${target},"
                    f'"{rng.choice(WORDS)}":@sig:!wait,{rng.randint(1, 9) * 100}'
                )
            else:
                directives.append(f'@fetch:"sensor/{rng.randint(1, 5)}.txt",${rng.choice(spare)}')
        previous = "S{" + "".join(f"${n}:{v};" for n, v in state.items()) + "}S"
        cycles.append(("INSTR:" + "".join(d + ";" for d in directives), previous))
    return cycles


async def bench_plsp(count: int, show: int) -> dict[str, tuple[float, float]]:
    """Share of cycles the middleware accepts (after its one re-ask) and on first try,
    for each grammar choice of the local provider."""
    from plsp import ActionRegistry, Loop, parse, parse_instr
    from plsp.providers import provider_model

    cycles = plsp_cycles(count)
    shares = {}
    for choice in ("none", "block", "cycle"):
        model, close = provider_model("local", None, max_tokens=256, grammar=choice)  # type: ignore[arg-type]
        loop = Loop(model, lambda context: None, actions=ActionRegistry(), retries=1)
        accepted = first = 0
        for number, (instr, previous) in enumerate(cycles, start=1):
            record = await loop.cycle(number, parse_instr(instr), parse(previous))
            accepted += record.accepted
            first += record.accepted and len(record.attempts) == 1
            if number <= show:
                print(f"  [{choice}] {instr}  {previous}")
                for attempt in record.attempts:
                    blocking = [str(v) for v in attempt.violations if v.blocking]
                    print(f"      reply {attempt.reply!r}  rejected: {blocking or 'no'}")
        await close()
        shares[choice] = (accepted / count, first / count)
    return shares


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--only", choices=("vlp", "vpp", "plsp"))
    parser.add_argument("--show", type=int, default=0, metavar="N")
    args = parser.parse_args()
    from openprose.providers import local_model_installed

    if not local_model_installed():
        print("protocol_compliance: skipped, the embedded model needs the [local] extra")
        return 0
    from openprose.providers.local import LocalProvider

    provider = LocalProvider()
    print(f"embedded model smollm2-135m-instruct, {args.prompts} prompts each, temperature 0")
    if args.only in (None, "vlp"):
        started = time.perf_counter()
        valid, first, baseline = asyncio.run(bench_vlp(provider, args.prompts))
        verdict = "PASS" if valid >= 0.95 else "FAIL"
        print(
            f"VLP  vlp.ask valid {valid:6.1%} (first try {first:6.1%})  |  unconstrained "
            f"baseline {baseline:6.1%}  goal >= 95% {verdict}  "
            f"[{time.perf_counter() - started:.0f} s, {_load()}]"
        )
    if args.only in (None, "vpp"):
        started = time.perf_counter()
        ok, first, baseline = asyncio.run(bench_vpp(provider, args.prompts))
        verdict = "PASS" if ok >= 0.95 else "FAIL"
        print(
            f"VPP  session valid {ok:6.1%} (first try {first:6.1%})  |  unconstrained "
            f"baseline {baseline:6.1%}  goal >= 95% {verdict}  "
            f"[{time.perf_counter() - started:.0f} s, {_load()}]"
        )
    if args.only in (None, "plsp"):
        started = time.perf_counter()
        shares = asyncio.run(bench_plsp(args.prompts, args.show))
        accepted, first = shares["cycle"]
        verdict = "PASS" if accepted >= 0.90 else "FAIL"
        print(
            f"PLSP cycles accepted {accepted:6.1%} (first try {first:6.1%})  |  unconstrained "
            f"baseline {shares['none'][0]:6.1%} (first try {shares['none'][1]:6.1%}), "
            f"block grammar {shares['block'][0]:6.1%} (first try {shares['block'][1]:6.1%})  "
            f"goal >= 90% {verdict}  [{time.perf_counter() - started:.0f} s, {_load()}]"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
