"""Plain durations as people write them in a design record: 90s, 15m, 2h, 1d, 1h30m."""

from __future__ import annotations

import re
from datetime import timedelta

from workflows.errors import InvalidInput

# Units appear at most once each, largest first, so "30m1h" or "1h1h" (usually a typo)
# is refused rather than silently summed. Each part may carry a decimal ("1.5h").
_PART = r"(?:(?P<{unit}>\d+(?:\.\d+)?){unit}\s*)?"
_PATTERN = re.compile(
    r"^\s*" + "".join(_PART.format(unit=unit) for unit in "dhms") + r"$",
)
_SECONDS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}

ACCEPTED_FORMS = "use e.g. 90s, 15m, 2h, 1d, 1h30m"


def parse_duration(text: str) -> timedelta:
    """Parse a positive duration made of d/h/m/s parts (e.g. "1h30m"); raise InvalidInput."""
    if not isinstance(text, str):
        raise InvalidInput(f"{text!r} is not a duration ({ACCEPTED_FORMS})")
    stripped = text.strip()
    # A bare number is refused: in a policy file "90" could mean seconds or minutes,
    # and guessing a response window wrong is worse than asking for the unit.
    if re.fullmatch(r"\d+(?:\.\d+)?", stripped):
        raise InvalidInput(f"{text!r} has no unit ({ACCEPTED_FORMS})")
    if stripped.startswith("-"):
        raise InvalidInput(f"{text!r} is negative; a duration must be positive ({ACCEPTED_FORMS})")
    match = _PATTERN.match(stripped)
    if not stripped or match is None:
        raise InvalidInput(f"{text!r} is not a duration ({ACCEPTED_FORMS})")
    seconds = sum(
        float(value) * _SECONDS[unit] for unit, value in match.groupdict().items() if value
    )
    if seconds <= 0:
        raise InvalidInput(f"{text!r} is not a positive duration ({ACCEPTED_FORMS})")
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """Render a timedelta in the form parse_duration reads back (e.g. "1h30m", "0.5s")."""
    total = value.total_seconds()
    if total <= 0:
        raise InvalidInput(f"{value!r} is not a positive duration")
    whole = int(total)
    parts: list[str] = []
    for unit in "dhm":
        count, whole = divmod(whole, _SECONDS[unit])
        if count:
            parts.append(f"{count}{unit}")
    seconds = whole + (total - int(total))
    if seconds:
        # Sub-second windows exist only in tests; keep them exact but short.
        parts.append(f"{round(seconds, 6):g}s")
    return "".join(parts)
