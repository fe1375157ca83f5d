"""A missing service is a skip on a developer's machine and a failure in CI (`CI=true`)."""

from __future__ import annotations

import pytest

from tests.support.services import import_or_missing, missing


@pytest.mark.parametrize(
    ("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_a_missing_service_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setenv("CI", ci)
    # (caught as any outcome: a skip where a failure was due must fail this test, not skip it)
    with pytest.raises(BaseException, match="Redis is not running") as raised:
        missing("Redis is not running on 127.0.0.1:6379")
    assert raised.type is outcome


@pytest.mark.parametrize(
    ("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_a_module_not_installed_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(BaseException, match="no_such_module_here is not installed") as raised:
        import_or_missing("no_such_module_here", "a test of the helper")
    assert raised.type is outcome


def test_a_module_installed_is_returned() -> None:
    assert import_or_missing("json", "the standard library").dumps([]) == "[]"
