"""Working hours per tier: when a below-critical page may go out (critical pierces them)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from workflows.design_errors import hint_names, rule_error
from workflows.vocabulary import Severity

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # date.weekday() order
# Every day of two weeks is looked at: a window listed on at least one weekday opens within.
_HORIZON = 15


def _check_zone(value: object) -> object:
    if not isinstance(value, str):
        return value
    try:
        ZoneInfo(value.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise rule_error(
            f"{value!r} is not a time zone the system knows (write an IANA name, e.g. "
            "Europe/Berlin or America/New_York)"
        ) from None
    return value.strip()


def _check_day(value: object) -> object:
    if not isinstance(value, str):
        return value
    day = value.strip().lower()[:3]
    if day not in DAYS:
        raise rule_error(f"unknown day ({hint_names(value, list(DAYS))})")
    return day


def _check_clock(value: object) -> object:
    """Read "09:00" (YAML would read a bare 09:00 as a number of minutes, so refuse numbers)."""
    if isinstance(value, time):
        return value
    if isinstance(value, str):
        try:
            return time.fromisoformat(value.strip())
        except ValueError:
            pass
    raise rule_error(f'{value!r} is not a time of day; quote it, e.g. "09:00"')


Zone = Annotated[str, BeforeValidator(_check_zone)]
Day = Annotated[str, BeforeValidator(_check_day)]
Clock = Annotated[time, BeforeValidator(_check_clock)]


class WorkingHours(BaseModel):
    """When a tier's people are at work: a time zone, days, and one daily span.

    `end` before `start` is a night shift: the span starts on the listed day and ends the
    next morning.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timezone: Zone
    days: Annotated[tuple[Day, ...], Field(min_length=1)] = DAYS[:5]
    start: Clock
    end: Clock

    @model_validator(mode="after")
    def _distinct(self) -> WorkingHours:
        if self.start == self.end:
            raise rule_error("start and end are the same time: the span would be empty", "end")
        if len(set(self.days)) != len(self.days):
            raise rule_error("a day is listed twice", "days")
        return self

    def spans(self, around: datetime) -> list[tuple[datetime, datetime]]:
        """The open spans (in UTC) that start from the day before `around`, for two weeks."""
        zone = ZoneInfo(self.timezone)
        first = around.astimezone(zone).date() - timedelta(days=1)
        found = []
        for offset in range(_HORIZON):
            day = first + timedelta(days=offset)
            if DAYS[day.weekday()] in self.days:
                found.append(self._span(day, zone))
        return found

    def _span(self, day: date, zone: ZoneInfo) -> tuple[datetime, datetime]:
        end_day = day + timedelta(days=1) if self.end <= self.start else day
        opens = datetime.combine(day, self.start, tzinfo=zone).astimezone(UTC)
        closes = datetime.combine(end_day, self.end, tzinfo=zone).astimezone(UTC)
        return opens, closes


def is_open(hours: WorkingHours, now: datetime) -> bool:
    """Whether `now` (aware) falls inside one of the spans."""
    return any(opens <= now < closes for opens, closes in hours.spans(now))


def opens_at(hours: WorkingHours | None, now: datetime) -> datetime:
    """`now` when the hours are open (or there are none), else when they next open."""
    if hours is None:
        return now
    for opens, closes in hours.spans(now):
        if opens <= now < closes:
            return now
        if opens > now:
            return opens
    return now  # unreachable for a valid design: some listed day falls within two weeks


def page_time(hours: WorkingHours | None, severity: Severity | str, now: datetime) -> datetime:
    """When a page of this severity goes out: critical pierces working hours, others wait."""
    if Severity(severity) is Severity.CRITICAL:
        return now
    return opens_at(hours, now)
