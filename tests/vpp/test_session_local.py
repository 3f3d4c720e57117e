"""`vpp.session.Session` with the embedded model: the frame in the grammar, a plain prompt,
bodies checked, and a history of what the model said (issue 34)."""

from __future__ import annotations

from openprose.providers import ModelRequest, ScriptedProvider, ScriptRule
from vpp import build_footer, initial_state
from vpp.reply_grammar import reply_grammar, reply_token_budget
from vpp.session import Session
from vpp.state import expect


def footer(tag: str, index: int, cycle: int = 1) -> str:
    return build_footer(tag, index, cycle=cycle, locus="default", version="1.5")


def scripted(*answers: str, name: str = "local") -> tuple[ScriptedProvider, list[ModelRequest]]:
    seen: list[ModelRequest] = []
    queue = list(answers)

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    provider = ScriptedProvider([ScriptRule(answer=answer)])
    provider.name = name  # type: ignore[misc]
    return provider, seen


async def test_the_embedded_model_gets_the_frame_as_grammar_and_a_plain_prompt() -> None:
    first = f"<g>\nLisbon in May.\n{footer('g', 1)}"
    second = f"<q>\nHow long can you stay?\n{footer('q', 1)}"
    provider, seen = scripted(first, second)
    session = Session(provider, "1.5", model="m", max_tokens=64)
    turn = await session.send_async("!<g>\nPlan a trip")
    assert turn.outcome == "valid"
    request = seen[0]
    assert request.grammar == reply_grammar(expect("!<g>\nPlan a trip", initial_state("1.5")))
    assert request.max_tokens == reply_token_budget()  # never cut before the footer
    assert request.system is not None and "Version=" not in request.system
    assert [m.content for m in request.messages] == ["Plan a trip"]
    await session.send_async("!<q>\nmore")
    assert [m.content for m in seen[1].messages] == ["Plan a trip", "Lisbon in May.", "more"]
    assert seen[1].grammar is not None and "Tag=q_1" in seen[1].grammar


async def test_a_hosted_model_gets_the_header_and_the_exact_frame_and_no_grammar() -> None:
    provider, seen = scripted(f"<g>\nA plan.\n{footer('g', 1)}", name="openai")
    session = Session(provider, "1.5", model="m")
    await session.send_async("!<g>\nPlan a trip")
    assert seen[0].grammar is None
    assert (seen[0].system or "").startswith(session.header) and footer("g", 1) in (
        seen[0].system or ""
    )


async def test_a_body_that_echoes_a_command_is_asked_again_not_passed() -> None:
    echoed = f"<g>\nreply 2: !<g> Plan a trip\n{footer('g', 1)}"
    own = f"<g>\nGo to Porto.\n{footer('g', 1)}"
    provider, seen = scripted(echoed, own)
    turn = await Session(provider, "1.5", model="m").send_async("!<g>\nPlan a trip")
    assert turn.outcome == "reasked" and not turn.first_try_ok
    assert [v.code for v in turn.attempts[0].violations] == ["body-echoes-command"]
    assert turn.reply == own and "body-echoes-command" in seen[1].last_user_text()


async def test_a_repaired_reply_is_recorded_as_such_and_the_model_sees_its_own_words() -> None:
    provider, seen = scripted("Porto is lovely.", f"<q>\nWhen?\n{footer('q', 1)}", name="x")
    session = Session(provider, "1.5", model="m")
    turn = await session.send_async("!<g>\nPlan a trip")
    assert turn.outcome == "repaired" and not turn.first_try_ok
    assert turn.reply == f"<g>\nPorto is lovely.\n{footer('g', 1)}"
    assert session.messages()[2]["vpp_session"]["outcome"] == "repaired"
    await session.send_async("!<q>\nmore")
    assert seen[1].messages[1].content == "Porto is lovely."


async def test_a_reply_left_empty_is_failed_and_its_placeholder_never_reaches_the_model() -> None:
    provider, seen = scripted(f"<g>\n{footer('g', 1)}", name="x")
    session = Session(provider, "1.5", model="m", max_reasks=0)
    turn = await session.send_async("!<g>\nPlan a trip")
    assert turn.outcome == "failed"
    await session.send_async("!<q>\nmore")
    shown = "\n".join(m.content for m in seen[-1].messages)
    assert "repaired structurally" not in shown and "(your answer)" not in shown
