"""docker-compose.yml, read as Compose reads it (no Docker engine runs here): every setting
reaches every service that reads settings, each long-running service has a health check,
and the runs folder is handed to the image's user before anything writes there."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from models.settings import Settings

COMPOSE = Path(__file__).resolve().parent.parent / "docker-compose.yml"
SETTINGS_READERS = ("migrate", "api", "worker", "beat")  # flower reads only the broker


def services() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return dict(loaded["services"])


def every_setting() -> list[str]:
    prefix = Settings.model_config.get("env_prefix", "")
    return [f"{prefix}{name}".upper() for name in Settings.model_fields]


@pytest.mark.parametrize("service", SETTINGS_READERS)
def test_every_setting_is_passed_to_every_service_that_reads_it(service: str) -> None:
    environment = services()[service]["environment"]
    missing = [name for name in every_setting() if name not in environment]
    assert missing == [], f"{service} never receives {missing}"


# Where the service sits inside docker-compose.yml (its Redis and PostgreSQL, its volumes,
# its api's port): fixed there, as a shell set up for a local run exports some of these
# with 127.0.0.1 and the shell wins over .env. Every other setting passes through.
FIXED = {
    "ESCALATE_BROKER_URL",
    "ESCALATE_DATABASE_URL",
    "ESCALATE_HOME",
    "ESCALATE_DESIGN",
    "ESCALATE_APPRISE_CONFIG",
    "ESCALATE_HOST",
    "ESCALATE_PORT",
    "ESCALATE_FILES_ROOT",
}


def passes_through(name: str, value: object) -> bool:
    """`${NAME}` or `${NAME:-default}`, where the default may itself read `${OTHER...}`."""
    found = re.fullmatch(rf"\$\{{{name}(?::-(.*))?\}}", str(value))
    if found is None:
        return False
    default = found.group(1) or ""
    while (inner := re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-[^{}$]*)?\}", "", default)) != default:
        default = inner
    return "{" not in default and "}" not in default


@pytest.mark.parametrize("service", SETTINGS_READERS)
def test_every_setting_set_in_env_reaches_the_containers(service: str) -> None:
    """A value set in .env is passed through, never replaced by a fixed one in the file."""
    environment = services()[service]["environment"]
    fixed = {name for name in every_setting() if not passes_through(name, environment[name])}
    assert fixed == FIXED, f"{service}: fixed beyond the placement settings: {fixed - FIXED}"


@pytest.mark.parametrize(
    ("value", "passes"),
    [
        ("${ESCALATE_QUEUE:-}", True),
        ("${ESCALATE_QUEUE}", True),
        ("${ESCALATE_QUEUE:-escalation}", True),
        ("${ESCALATE_QUEUE:-a-${PW:-x}-b}", True),
        ("escalation", False),
        ("${ESCALATE_QUEUE_NAME:-}", False),
        ("${ESCALATE_QUEUE:-a}${OTHER}", False),
        ("${ESCALATE_QUEUE:-a}-suffix}", False),
    ],
)
def test_a_pass_through_is_the_settings_own_variable_and_nothing_fixed(
    value: str, passes: bool
) -> None:
    assert passes_through("ESCALATE_QUEUE", value) is passes


@pytest.mark.parametrize("service", ["api", "worker", "beat"])
def test_long_running_services_have_a_health_check(service: str) -> None:
    check = services()[service].get("healthcheck")
    assert check and check["test"], f"{service} has no health check"


def test_the_runs_folder_is_given_to_the_image_user_before_anything_writes() -> None:
    found = services()
    owner = found["runs-owner"]
    assert owner["user"] == "0" and "chown 10001:10001 /runs" in " ".join(owner["command"])
    writers = ("migrate",)  # api, worker and beat start after migrate has completed
    for name in writers:
        assert "runs-owner" in found[name]["depends_on"]
    for name in ("api", "worker", "beat"):
        assert "migrate" in found[name]["depends_on"]
    uid = re.search(r"useradd[^\n]*--uid (\d+)", (COMPOSE.parent / "Dockerfile").read_text())
    assert uid and uid.group(1) == "10001"
