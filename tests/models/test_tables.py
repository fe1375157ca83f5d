"""Rows built in Python: each one's JSON defaults are its own."""

from datetime import UTC, datetime

from models.tables import Delivery, Escalation, Event, Reply, TaskWait


def test_each_new_row_gets_its_own_empty_json_values() -> None:
    now = datetime.now(UTC)
    first, second = (
        Escalation(id=f"c{n}", run_id="r", packet_id=f"p{n}", severity="low", trigger_type="t")
        for n in (1, 2)
    )
    first.options.append({"id": "approve"})
    first.wake["queue"] = "q"
    first.problems.append("late")
    assert (second.options, second.wake, second.problems) == ([], {}, [])

    for model, column, extra in (
        (Event, "detail", {"escalation_id": "c1", "at": now, "kind": "k", "state": "received"}),
        (Delivery, "payload", {"escalation_id": "c1", "target": "ops", "created_at": now}),
        (Reply, "parsed", {"escalation_id": "c1", "at": now, "channel": "api"}),
        (TaskWait, "escalation_ids", {"task": "t", "set_key": "k", "created_at": now}),
    ):
        mutated, fresh = model(**extra), model(**extra)
        value = getattr(mutated, column)
        value.append("x") if isinstance(value, list) else value.update(x=1)
        assert getattr(fresh, column) in ([], {}), model.__name__
