"""A LangGraph graph of plain functions (no model) for tests/api/test_langgraph.py: run as
`python -m tests.api.langgraph_run raise|resume DB THREAD`, one process each, sharing only the
SQLite checkpointer file and the service."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from api.client import Escalations
from api.langgraph_adapter import escalate_interrupt, resume_if_decided
from workflows.examples import valid_packet


class Migration(TypedDict, total=False):
    counted: int
    answer: dict[str, Any]
    done: str


def count(state: Migration) -> Migration:
    return {"counted": state.get("counted", 0) + 1}  # runs once, never again on resume


def ask(_state: Migration) -> Migration:
    packet = {k: v for k, v in valid_packet().items() if k not in ("packet_id", "run_id")}
    answer = interrupt(
        {**packet, "options": ["Skip the 3 records", {"label": "Stop now", "value": "stop"}]}
    )
    return {"answer": answer}


def act(state: Migration) -> Migration:
    answer = state["answer"]
    return {"done": f"{answer['outcome']}:{answer['value']}:{answer['resumes']}"}


def build() -> StateGraph[Migration]:
    graph = StateGraph(Migration)
    graph.add_node("count", count)
    graph.add_node("ask", ask)
    graph.add_node("act", act)
    graph.add_edge(START, "count")
    graph.add_edge("count", "ask")
    graph.add_edge("ask", "act")
    graph.add_edge("act", END)
    return graph


def main(step: str, db: str, thread: str) -> None:
    client = Escalations(os.environ["ESCALATE_URL"], os.environ["ESCALATE_TOKEN"])
    config = {"configurable": {"thread_id": thread}}
    with SqliteSaver.from_conn_string(db) as checkpointer:
        graph = build().compile(checkpointer=checkpointer)
        if step == "raise":
            if not graph.get_state(config).next:  # a restarted process finds it interrupted
                graph.invoke({}, config)
            print(json.dumps({"id": escalate_interrupt(client, graph, config)}))
        else:
            resumed = resume_if_decided(client, graph, config, sys.argv[4], timeout=20)
            print(
                json.dumps(
                    {
                        "outcome": resumed.outcome,
                        "resumed": resumed.resumed,
                        "output": resumed.output,
                    }
                )
            )


if __name__ == "__main__":
    main(*sys.argv[1:4])
