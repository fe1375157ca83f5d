"""The OpenAPI schema is the API (issue #14, item 12): schemathesis, in process against
create_app (ASGI, no server), for each token kind, stateless and stateful, finds nothing:
no 5xx, no undocumented status, no answer off its schema, and no request the schema allows
refused with a 4xx that is not about the caller or the case (positive data acceptance).

Bounded for the suite; `make fuzz` is the deep run (200 examples per operation and mode,
100 scenarios per token kind; the same variables set other bounds).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlmodel import SQLModel

from api.app import create_app
from models.settings import Settings
from workers.inbound.dispatch import MissLimiter

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("ESCALATE_FUZZ_EXAMPLES", "3"))  # per operation and mode
SCENARIOS = int(os.environ.get("ESCALATE_FUZZ_SCENARIOS", "5"))  # stateful runs per kind
# The bounded run draws the same examples each time (a suite that cannot flake); a deep run,
# with either bound set, draws new ones.
DERANDOMIZE = not {"ESCALATE_FUZZ_EXAMPLES", "ESCALATE_FUZZ_SCENARIOS"} & set(os.environ)
TOKENS = {"agent": "agent-t", "operator": "op-t", "admin": "admin-t", "none": None}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    response_schema_conformance,
    content_type_conformance,
    positive_data_acceptance,
    ignored_auth,  # an operation that declares a token refuses a request without one
]
# Rules the schema states in words only (JSON Schema cannot say them): a 422 naming one is
# the documented answer, not a schema-valid request refused.
IN_WORDS = (
    "contains a secret",
    "two options share a label",
    # a reply naming no option of the case, holding a secret, or a command whose cap is spent
    '"outcome":"unknown_option"',
    '"outcome":"withheld"',
    '"outcome":"over_cap"',
)
# The run's webhook and http probe are judged by resolving their host at intake: generated
# hosts become one the fuzzed service's allow-list admits, so no test waits on DNS.
REACHABLE = "http://127.0.0.1:9/hook"


@dataclass
class Fuzzed:
    """One service for the module's runs, its schema, and the strategies built from it
    (building one takes seconds: each is built once, then drawn from for every kind)."""

    app: FastAPI
    schema: Any
    strategies: dict[tuple[str, GenerationMode], Any] = field(default_factory=dict)

    def strategy(self, operation: Any, mode: GenerationMode) -> Any:
        key = (operation.label, mode)
        if key not in self.strategies:
            self.strategies[key] = operation.as_strategy(generation_mode=mode)
        return self.strategies[key]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    settings = Settings(
        home=tmp_path_factory.mktemp("fuzzed") / "home",
        design=REPO / "examples" / "design-fast.yaml",
        api_tokens="agent:agent-t,operator:op-t,admin:admin-t",
        slack_signing_secret="fuzz-slack-secret",
        telegram_secret="fuzz-telegram-secret",
        outbound_allow="127.0.0.1",
    )
    built = create_app(settings)
    with TestClient(built):  # runs the lifespan: the database is migrated
        yield Fuzzed(built, schemathesis.openapi.from_asgi("/openapi.json", built))


def headers_for(kind: str) -> dict[str, str]:
    token = TOKENS[kind]
    return {"Authorization": f"Bearer {token}"} if token else {}


def offline(case: Case) -> None:
    """Point generated webhook and http-probe URLs at the allowed loopback (never sent), and
    hold a long-poll 0 s (its hold is up to 45 s; schemathesis waits 10 s for an answer)."""
    if case.path.endswith("/wait"):
        case.query = {**(case.query or {}), "hold": 0}
    body = case.body if isinstance(case.body, dict) else {}
    snapshot = body.get("snapshot")
    fingerprint = snapshot.get("fingerprint") if isinstance(snapshot, dict) else None
    for part in (body.get("wake"), fingerprint):
        if isinstance(part, dict):
            for key in ("webhook", "url"):
                if isinstance(part.get(key), str):
                    part[key] = REACHABLE


def found(case: Case, response: Any, headers: dict[str, str]) -> str | None:
    """What the checks find in one answer (None: nothing)."""
    try:
        case.validate_response(response, checks=CHECKS, headers=headers)
    except (AssertionError, BaseExceptionGroup) as failure:  # the checks that failed
        if response.status_code == 422 and any(words in response.text for words in IN_WORDS):
            return None
        checks = [line.strip("- ") for line in str(failure).splitlines() if line.startswith("- ")]
        answer = f"[{response.status_code}] {response.text:.600}"
        return f"{case.method} {case.path} {checks} {answer}: {case.body!r:.600}"
    return None


def forget_everything(app: FastAPI) -> None:
    """Empty every table (the schema stays) and the guess limiter."""
    runtime = app.state.runtime
    with runtime.engine.begin() as connection:
        for table in reversed(SQLModel.metadata.sorted_tables):
            connection.execute(table.delete())
    app.state.limiter = MissLimiter()


def run_stateless(fuzzed: Fuzzed, headers: dict[str, str]) -> list[str]:
    failures: list[str] = []
    for result in fuzzed.schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            probe = _probe(fuzzed.strategy(operation, mode), headers, failures)
            try:
                probe()
            except Unsatisfiable:  # nothing to negate (no parameters, a free-form body)
                continue
    return failures


def _probe(strategy: Any, headers: dict[str, str], failures: list[str]) -> Callable[[], None]:
    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=DERANDOMIZE,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    def probe(case: Case) -> None:
        offline(case)
        if failure := found(case, case.call(headers=headers), headers):
            failures.append(failure)

    return probe  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", list(TOKENS))
def test_stateless_schemathesis_finds_nothing(fuzzed: Fuzzed, kind: str) -> None:
    # Given the service with every face configured, called with this kind of token
    # When schemathesis sends schema-valid and schema-invalid requests to every operation
    failures = run_stateless(fuzzed, headers_for(kind))
    # Then no check finds anything
    assert failures == []


@pytest.mark.parametrize("kind", list(TOKENS))
def test_stateful_schemathesis_finds_nothing(fuzzed: Fuzzed, kind: str) -> None:
    # Given the links from a raised case to its reads, wait, events, replies and retry
    app, schema = fuzzed.app, fuzzed.schema
    headers = headers_for(kind)
    failures: list[str] = []

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # Each scenario starts from an empty service, so a replayed one answers alike.
            forget_everything(app)

        def get_call_kwargs(self, case: Case) -> dict[str, Any]:
            offline(case)
            return {"headers": headers}

        def validate_response(self, response: Any, case: Case, **_kwargs: Any) -> None:
            if failure := found(case, response, headers):
                failures.append(failure)

    # When scenarios raise cases and follow the links
    Workflow.run(
        settings=settings(
            max_examples=SCENARIOS,
            stateful_step_count=5,
            deadline=None,
            derandomize=DERANDOMIZE,
            database=None,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.generate],
        )
    )
    # Then no step's answer is found wanting
    assert failures == []


def test_an_undeclared_method_is_a_405_that_names_the_declared_ones(fuzzed: Fuzzed) -> None:
    client = TestClient(fuzzed.app)
    spec = client.get("/openapi.json").json()
    wrong = {}
    for path, operations in spec["paths"].items():
        url = path.replace("{escalation_id}", "e1").replace("{wake_id}", "w1")
        url = url.replace("{task}", "t1")
        declared = {method.upper() for method in operations}
        for method in {"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} - declared:
            answer = client.request(method, url)
            allowed = {m.strip() for m in answer.headers.get("allow", "").split(",")}
            if answer.status_code != 405 or allowed - {"HEAD"} != declared:
                wrong[f"{method} {path}"] = (answer.status_code, answer.headers.get("allow"))
    assert wrong == {}
