"""Protocol compliance of the embedded model (issues 15, 34): VLP answers, VPP replies,
PLSP cycles, first attempt.

For each protocol the same model answers the same prompts through the package's runtime
(`vlp.ask`: the answer grammar and the safety rule; `vpp.session`: the reply grammar, the
body checks; the PLSP middleware with the syntax-only `block` grammar and the `guided`
request (the block's shape fixed, every value the model's), which measure the model, and
the `cycle` grammar, which admits only the verifier's answers; for each, what the
rejected first attempts did wrong). The figure
that counts is the share right on the first attempt (no re-ask, no repair); the share
after the runtime's re-asks is shown beside it. With `--baseline`, also unconstrained
(the protocol's instructions alone; PLSP without a grammar). Greedy decoding (temperature
0) and prompts from fixed lists or a fixed seed, so the figures repeat. Reports the
shares, seconds per turn (wall, and CPU of the process: the machine is shared), the
1-minute load average and PASS/FAIL against issue 34's goals; exits 0.

    .venv/bin/python bench/protocol_compliance.py [--prompts 20] [--only vlp|vpp|plsp]
        [--baseline] [--show N]   # print the replies of the first N PLSP cycles
        [--plsp-seed S ...]       # other draws of PLSP cycles (default 15)
        [--plsp-grammar G ...]    # only these PLSP grammar choices (default all three)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from collections import Counter
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


async def bench_vlp(provider: object, count: int, baseline_too: bool) -> tuple[float, float, float]:
    from openprose.providers.base import Message, ModelRequest
    from vlp import ask as asking

    valid = first = baseline = 0
    for question in prompts(QUESTIONS, count):
        answer = await asking.ask_async(provider, question, model="local", temperature=0.0)  # type: ignore[arg-type]
        valid += answer.ok
        first += answer.ok and len(answer.attempts) == 1
        if not baseline_too:
            continue
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


async def bench_vpp(provider: object, count: int, baseline_too: bool) -> tuple[float, float, float]:
    from openprose.providers.base import Message, ModelRequest
    from vpp import header_snippet, initial_state, validate_exchange
    from vpp.session import Session

    ok = first = baseline = 0
    done = 0
    for subject in SUBJECTS * (count // len(SUBJECTS) + 1):
        if done >= count:
            break
        session = Session(provider, "1.5", model="local", temperature=0.0)  # type: ignore[arg-type]
        state = initial_state("1.5")
        history: list[Message] = []
        for template in VPP_SCRIPT:
            if done >= count:
                break
            user = template.format(subject)
            turn = await session.send_async(user)
            ok += turn.ok
            first += turn.first_try_ok
            done += 1
            if not baseline_too:
                continue
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


PLSP_CHOICES = ("block", "guided", "cycle")


async def bench_plsp(
    count: int,
    show: int,
    baseline_too: bool,
    seed: int = PLSP_SEED,
    choices: tuple[str, ...] = PLSP_CHOICES,
) -> dict[str, tuple[float, float]]:
    """Share of cycles the middleware accepts (after its one re-ask) and on first try,
    for each grammar choice of the local provider."""
    from plsp import ActionRegistry, Loop, parse, parse_instr
    from plsp.providers import provider_model

    cycles = plsp_cycles(count, seed)
    shares = {}
    for choice in ("none", *choices) if baseline_too else choices:
        model, close = provider_model("local", None, max_tokens=256, grammar=choice)  # type: ignore[arg-type]
        loop = Loop(model, lambda context: None, actions=ActionRegistry(), retries=1)
        accepted = first = 0
        faults: Counter[str] = Counter()
        for number, (instr, previous) in enumerate(cycles, start=1):
            record = await loop.cycle(number, parse_instr(instr), parse(previous))
            accepted += record.accepted
            first += record.accepted and len(record.attempts) == 1
            faults.update({v.kind for v in record.attempts[0].violations if v.blocking})
            if number <= show:
                print(f"  [{choice}] {instr}  {previous}")
                for attempt in record.attempts:
                    blocking = [str(v) for v in attempt.violations if v.blocking]
                    print(f"      reply {attempt.reply!r}  rejected: {blocking or 'no'}")
        await close()
        shares[choice] = (accepted / count, first / count)
        kinds = ", ".join(f"{kind} {n}" for kind, n in faults.most_common()) or "none"
        print(f"  PLSP {choice:6} first attempts rejected for (cycles): {kinds}")
    return shares


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _verdict(share: float, goal: float) -> str:
    return f"goal >= {goal:.0%} {'PASS' if share >= goal else 'FAIL'}"


def _timing(started: tuple[float, float], turns: int) -> str:
    wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
    return f"[{wall / turns:.1f} s/turn wall, {cpu / turns:.1f} s/turn CPU, {_load()}]"


def _baseline(share: float | None) -> str:
    return "" if share is None else f"  |  unconstrained {share:6.1%}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--only", choices=("vlp", "vpp", "plsp"))
    parser.add_argument("--baseline", action="store_true", help="also unconstrained")
    parser.add_argument("--show", type=int, default=0, metavar="N")
    parser.add_argument("--plsp-seed", type=int, nargs="+", default=[PLSP_SEED], metavar="S")
    parser.add_argument("--plsp-grammar", nargs="+", choices=PLSP_CHOICES, default=PLSP_CHOICES)
    args = parser.parse_args()
    from openprose.providers import local_model_installed

    if not local_model_installed():
        print("protocol_compliance: skipped, the embedded model needs the [local] extra")
        return 0
    from openprose.providers.local import LocalProvider

    provider = LocalProvider()
    count = args.prompts
    print(f"embedded model smollm2-135m-instruct, {count} turns each, temperature 0")
    if args.only in (None, "vlp"):
        started = (time.perf_counter(), time.process_time())
        valid, first, baseline = asyncio.run(bench_vlp(provider, count, args.baseline))
        print(
            f"VLP  first attempt valid {first:6.1%} (after re-ask {valid:6.1%})"
            f"{_baseline(baseline if args.baseline else None)}  {_verdict(first, 0.95)}  "
            f"{_timing(started, count)}"
        )
    if args.only in (None, "vpp"):
        started = (time.perf_counter(), time.process_time())
        ok, first, baseline = asyncio.run(bench_vpp(provider, count, args.baseline))
        print(
            f"VPP  first attempt compliant, own body {first:6.1%} (after re-ask {ok:6.1%})"
            f"{_baseline(baseline if args.baseline else None)}  {_verdict(first, 0.90)}  "
            f"{_timing(started, count)}"
        )
    for seed in args.plsp_seed if args.only in (None, "plsp") else []:
        started = (time.perf_counter(), time.process_time())
        choices = tuple(dict.fromkeys(args.plsp_grammar))
        shares = asyncio.run(bench_plsp(count, args.show, args.baseline, seed, choices))
        none = shares["none"][1] if args.baseline else None
        parts = [
            f"{choice} {shares[choice][1]:6.1%} (after re-ask {shares[choice][0]:6.1%})"
            for choice in choices
        ]
        verdicts = [
            f"{choice} {_verdict(shares[choice][1], 0.80)}"
            for choice in ("block", "guided")
            if choice in shares
        ]
        print(
            f"PLSP seed {seed} first attempt: {'; '.join(parts)}{_baseline(none)}  "
            f"{', '.join(verdicts)}  {_timing(started, count * len(shares))}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
