"""All configuration in one typed object, read from ESCALATE_* environment variables."""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from workflows.outbound import parse_allow_list


def parse_networks(text: str | None) -> tuple[IPv4Network | IPv6Network, ...]:
    """'10.0.0.1,192.168.0.0/16' as networks; ValueError names a bad entry."""
    entries = [part.strip() for part in (text or "").split(",") if part.strip()]
    try:
        return tuple(ip_network(entry, strict=False) for entry in entries)
    except ValueError as exc:
        raise ValueError(f"ESCALATE_TRUSTED_PROXIES: {exc}") from None


REPO_EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class Settings(BaseSettings):
    """Service settings; the defaults run everything embedded under `home`."""

    # An empty variable means "unset", so compose files can offer ${ESCALATE_X:-}.
    model_config = SettingsConfigDict(env_prefix="ESCALATE_", extra="ignore", env_ignore_empty=True)

    home: Path = Field(default=Path(".escalate"), description="State folder (SQLite, tokens).")
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default SQLite in `home`."
    )
    broker_url: str | None = Field(
        default=None, description="Celery broker URL; default a broker folder in `home`."
    )
    design: Path | None = Field(default=None, description="Design record YAML (SPEC §2).")
    apprise_config: Path | None = Field(
        default=None, description="apprise YAML config whose tags the design names."
    )
    api_tokens: str | None = Field(
        default=None, description="Bearer tokens with roles, e.g. 'agent:abc,operator:def'."
    )
    webhook_secret: str | None = Field(
        default=None, description="Key that signs wake-up webhooks; generated into `home`."
    )
    answer_key: str | None = Field(
        default=None, description="Key for reply tokens and answer links; generated into `home`."
    )
    slack_signing_secret: str | None = Field(
        default=None, description="Slack app signing secret: enables POST /v1/inbound/slack."
    )
    telegram_secret: str | None = Field(
        default=None, description="Telegram webhook secret token: enables /v1/inbound/telegram."
    )
    telegram_bot_token: str | None = Field(
        default=None, description="Bot token for `escalate telegram-poll` (no public URL needed)."
    )
    slack_api_url: str = Field(
        default="https://slack.com/api",
        description="Slack Web API base (chat.postMessage, chat.update) for slack:// bot URLs.",
    )
    telegram_api_url: str = Field(
        default="https://api.telegram.org",
        description="Telegram Bot API base (sendMessage, editMessageText, answerCallbackQuery).",
    )
    link_max_age: float = Field(
        default=7 * 86400, gt=0, description="Seconds an answer link stays valid."
    )
    public_url: str | None = Field(
        default=None, description="Base URL people open; default http://host:port."
    )
    files_root: str | None = Field(
        default=None,
        description="Folders (':'-separated) where runs' files may be read and written "
        "(BLOCKED.md, command files, pipeline state); default anywhere this user can.",
    )
    outbound_allow: str | None = Field(
        default=None,
        description="Hosts, host:port or CIDRs (','-separated) that runs' webhooks and http "
        "probes may reach besides public addresses; loopback, link-local, private, multicast "
        "and the service's own address are refused unless named here.",
    )
    host: str = "127.0.0.1"
    port: int = 8765

    queue: str = "escalation"
    sweep_interval: float = Field(default=2.0, gt=0, description="Seconds between sweeps.")
    stall_after: float = Field(
        default=30.0, gt=0, description="Seconds before a stage counts as stalled."
    )
    max_stage_attempts: int = Field(default=5, ge=1, description="Attempts before dead_letter.")
    delivery_tries: int = Field(default=3, ge=1, description="Sends per delivery attempt.")
    delivery_backoff: float = Field(default=1.0, gt=0, description="First backoff, seconds.")
    delivery_retry_interval: float = Field(
        default=30.0, gt=0, description="Seconds between delivery attempts after a failure."
    )
    delivery_max_attempts: int = Field(
        default=5, ge=1, description="Attempts before the delivery failure is escalated."
    )
    send_timeout: float = Field(default=10.0, gt=0, description="Seconds per channel send.")
    # Below the task soft time limit (120 s): a timed-out intake would be acked, and lost.
    intake_retry_for: float = Field(
        default=60.0,
        gt=0,
        le=100,
        description="Seconds one delivery of a sent-by-name escalation retries a database "
        "that does not answer before giving the message back to the broker, unacknowledged.",
    )
    intake_retry_max_delay: float = Field(
        default=5.0, gt=0, description="Longest pause between those retries, seconds."
    )
    intake_failure_retries: int = Field(
        default=8,
        ge=0,
        description="Times a sent-by-name escalation that could not be admitted for another "
        "reason (an unreadable design, an unexpected error) is tried again before it is "
        "stored as a refused case naming why.",
    )
    intake_failure_delay: float = Field(
        default=5.0,
        gt=0,
        description="Seconds before the first of those tries; each pause twice the last, "
        "at most 60.",
    )
    wake_ack_wait: float = Field(
        default=300.0,
        gt=0,
        description="Seconds a closed case waits for the run to acknowledge its wake before "
        "it is sent again (each wait twice the one before).",
    )
    wake_redeliveries: int = Field(
        default=3,
        ge=0,
        description="Times an unacknowledged wake is sent again before the case shows "
        "decided, not resumed.",
    )

    @field_validator("outbound_allow")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        parse_allow_list(value)  # a typo fails at start, naming the entry
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_parse(cls, value: str | None) -> str | None:
        parse_networks(value)
        return value

    @property
    def proxy_networks(self) -> tuple[IPv4Network | IPv6Network, ...]:
        return parse_networks(self.trusted_proxies)

    # The HTTP faces (api/).
    trusted_proxies: str | None = Field(
        default=None,
        description="Addresses or CIDRs (','-separated) of reverse proxies whose "
        "X-Forwarded-For names the caller; unset, the peer address is the caller.",
    )
    max_body_size: int = Field(
        default=256 * 1024,
        ge=1024,
        description="Bytes one request body may hold; a larger one is refused with 413.",
    )

    @property
    def file_roots(self) -> tuple[Path, ...]:
        """The resolved `files_root` folders; empty means no restriction."""
        parts = (self.files_root or "").split(":")
        return tuple(Path(part).expanduser().resolve() for part in parts if part.strip())

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.home / 'escalate.sqlite').resolve()}"

    @property
    def resolved_broker_url(self) -> str:
        return self.broker_url or "filesystem://"

    @property
    def resolved_public_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def embedded_broker(self) -> bool:
        return self.resolved_broker_url.startswith("filesystem://")

    @property
    def broker_folder(self) -> Path:
        return (self.home / "broker").resolve()

    @property
    def design_path(self) -> Path:
        return self.design or REPO_EXAMPLES / "design.yaml"
