"""EventHub with a second producer: events a worker stored are relayed in index order,
and a subscriber never gets one twice or misses one, whatever has been relayed yet."""

from __future__ import annotations

from typing import Any

from explorer.hub import EventHub
from explorer.protocol import RunEvent, empty_summary
from explorer.store import Store


def _hub() -> tuple[Store, EventHub, list[RunEvent]]:
    store = Store(":memory:")
    store.add_run(empty_summary("r1", "s1", {}))
    hub = EventHub(store)
    seen: list[RunEvent] = []
    hub.add_sink(seen.append)
    hub.open_run("r1")
    return store, hub, seen


def _worker_append(store: Store, k: int) -> RunEvent:
    return store.append_event("r1", "s1", "pass_started", {"pass_index": k})


def test_relay_fills_gaps_from_the_store_and_skips_what_it_had():
    store, hub, seen = _hub()
    first, second, third = (_worker_append(store, k) for k in range(3))
    hub.relay(third)  # its announcement came first: the earlier ones are read back
    hub.relay(first)
    hub.relay(second)
    assert [e["index"] for e in seen] == [0, 1, 2]
    fourth = _worker_append(store, 3)
    assert hub.catch_up("r1") == 1
    hub.relay(fourth)
    assert [e["index"] for e in seen] == [0, 1, 2, 3]


def test_subscribe_replays_only_what_was_relayed_and_the_rest_arrives_live():
    store, hub, seen = _hub()
    relayed = _worker_append(store, 0)
    hub.relay(relayed)
    pending = _worker_append(store, 1)  # stored by the worker, not relayed yet
    sent: list[RunEvent] = []
    joined: list[bool] = []
    replayed = hub.subscribe("r1", 0, sent.append, lambda: joined.append(True))
    assert replayed == 1 and [e["index"] for e in sent] == [0] and joined == [True]
    hub.relay(pending)
    assert [e["index"] for e in seen] == [0, 1]  # the live stream brings index 1


def test_a_closed_run_replays_everything_stored():
    store, hub, _ = _hub()
    for k in range(3):
        _worker_append(store, k)
    hub.close_run("r1")
    sent: list[Any] = []
    assert hub.subscribe("r1", 1, sent.append, lambda: None) == 2
    assert [e["index"] for e in sent] == [1, 2]
    hub.relay(_worker_append(store, 3))  # not live here any more: nothing relayed
    assert not hub.is_open("r1")


def test_publish_and_relay_share_one_index_sequence():
    store, hub, seen = _hub()
    hub.publish("r1", "s1", "run_queued", {"position": 1})
    hub.relay(_worker_append(store, 0))
    hub.publish("r1", "s1", "run_cancelled", {})
    assert [(e["index"], e["type"]) for e in seen] == [
        (0, "run_queued"), (1, "pass_started"), (2, "run_cancelled")]
