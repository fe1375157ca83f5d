"""A missing service is a skip on a developer's machine and a failure in CI (`CI=true`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.services import import_or_missing, missing


@pytest.mark.parametrize(
    ("absent", "message"),
    [
        (lambda: missing("Redis is not running on 127.0.0.1:6379"), "Redis is not running"),
        (lambda: import_or_missing("no_such_module_here", "a test"), "no_such_module_here is"),
    ],
)
@pytest.mark.parametrize(
    ("ci", "outcome"),
    [("true", pytest.fail.Exception), ("1", pytest.fail.Exception), ("", pytest.skip.Exception)],
)
def test_what_is_missing_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
    absent: Callable[[], object],
    message: str,
    ci: str,
    outcome: type[BaseException],
) -> None:
    monkeypatch.setenv("CI", ci)
    # (caught as any outcome: a skip where a failure was due must fail this test, not skip it)
    with pytest.raises(BaseException, match=message) as raised:
        absent()
    assert raised.type is outcome


def test_a_module_installed_is_returned() -> None:
    assert import_or_missing("json", "the standard library").dumps([]) == "[]"
