"""`providers.slots.Slots`: at most `size` holders, the others served in arrival order, a
cancelled waiter never keeps a slot — what `asyncio.Semaphore` promised the provider."""

from __future__ import annotations

import asyncio

import pytest

from openprose.providers.slots import Slots


async def _hold(slots: Slots) -> None:
    if not slots.take():
        await slots.wait()


async def test_free_slots_are_taken_at_once_and_given_back() -> None:
    slots = Slots(2)
    assert slots.take() and slots.take()
    assert not slots.take()
    slots.release()
    assert slots.take()


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        Slots(-1)


async def test_waiters_are_served_in_arrival_order_and_no_newcomer_jumps_ahead() -> None:
    slots = Slots(1)
    assert slots.take()
    served: list[int] = []

    async def call(number: int) -> None:
        await _hold(slots)
        served.append(number)

    waiting = [asyncio.ensure_future(call(i)) for i in range(3)]
    await asyncio.sleep(0)
    assert served == []
    slots.release()  # handed to call 0, not made free
    assert not slots.take()
    await asyncio.sleep(0)
    assert served == [0]
    slots.release()
    slots.release()
    await asyncio.gather(*waiting)
    assert served == [0, 1, 2]
    slots.release()
    assert slots.take()  # every slot came back
    assert not slots.take()


async def test_a_cancelled_waiter_is_passed_by() -> None:
    slots = Slots(1)
    assert slots.take()
    first = asyncio.ensure_future(_hold(slots))
    second = asyncio.ensure_future(_hold(slots))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    slots.release()
    await asyncio.wait_for(second, 1)  # the slot went to the second
    assert first.cancelled()
    assert not slots.take()


async def test_a_waiter_cancelled_as_a_slot_is_handed_to_it_passes_the_slot_on() -> None:
    slots = Slots(1)
    assert slots.take()
    first = asyncio.ensure_future(_hold(slots))
    second = asyncio.ensure_future(_hold(slots))
    await asyncio.sleep(0)
    slots.release()  # handed to the first, which has not run yet...
    first.cancel()  # ...and is cancelled before it does
    await asyncio.wait_for(second, 1)
    assert first.cancelled()
    slots.release()
    assert slots.take()  # one slot in all, not two, not none
    assert not slots.take()


async def test_a_cancelled_waiter_left_alone_does_not_block_later_calls() -> None:
    slots = Slots(1)
    assert slots.take()
    gone = asyncio.ensure_future(_hold(slots))
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.sleep(0)
    slots.release()  # nobody waits any more: the slot is free
    assert slots.take()
