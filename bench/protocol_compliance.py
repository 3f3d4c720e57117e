"""Protocol compliance of the embedded model (issue 15): VLP answers and VPP replies.

For each protocol the same model answers the same prompts twice in one run: through the
package's runtime (`vlp.ask`: schema-constrained decoding and one re-ask; `vpp.session`:
frame in the prompt, mechanical repair, bounded re-ask) and unconstrained (the protocol's
instructions alone, the reply checked as it came). Greedy decoding (temperature 0), so the
figures repeat. Reports the shares and PASS/FAIL against the issue's goals; exits 0.

    .venv/bin/python bench/protocol_compliance.py [--prompts 50] [--only vlp|vpp]
"""

from __future__ import annotations

import argparse
import asyncio
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--only", choices=("vlp", "vpp"))
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
            f"[{time.perf_counter() - started:.0f} s]"
        )
    if args.only in (None, "vpp"):
        started = time.perf_counter()
        ok, first, baseline = asyncio.run(bench_vpp(provider, args.prompts))
        verdict = "PASS" if ok >= 0.95 else "FAIL"
        print(
            f"VPP  session valid {ok:6.1%} (first try {first:6.1%})  |  unconstrained "
            f"baseline {baseline:6.1%}  goal >= 95% {verdict}  "
            f"[{time.perf_counter() - started:.0f} s]"
        )
    print("PLSP not measured here: see docs/decisions.md (Issue 15)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
