"""When a time-bound statement stops being true: "on call this week", "travelling until Friday".

``expires_at`` reads the time a sentence states or implies and answers the end of it (the end
of the day it names, in UTC, since the router does not know the user's time zone), or None
when the sentence names no time it can place. Dates of yearly events (birthdays,
anniversaries) are facts, not ends.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, timedelta

_FLAGS = re.IGNORECASE
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = tuple(m.lower() for m in calendar.month_name[1:])
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_NUMBERS |= {"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}
_DAY = r"(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
# Month names and their short forms, as a pattern's alternatives.
MONTH_NAMES = (
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
)
_MONTH = rf"(?P<month>{MONTH_NAMES})\.?(?!\w)"
_NTH = r"(?P<nth>\d{1,2})(?:st|nd|rd|th)?"
_PARTS = "(?:morning|afternoon|evening|night)s"  # "on Monday evenings" is a habit, not a day
_COUNT = r"(?P<count>\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few)"
# Yearly dates are facts ("my daughter turns 10 on June 3"), and a standing habit ("never on
# Fridays") holds beyond the day it names.
_LASTING = re.compile(
    r"\b(?:birthdays?|anniversar(?:y|ies)|born|turns \d+|name day|always|never|usually|every|each|whenever|"
    r"from now on)\b",
    _FLAGS,
)
# "I have been vegan for two months": a span that has passed, not one to come.
_PAST_SPAN = re.compile(r"\b(?:have|has|had|'ve)\s+(?:\w+\s+)?(?:been|lived|worked|had|known|used)\b|\bsince\b", _FLAGS)
# "We moved to Lisbon on March 3", "vegetarian since January 5th": a change that happened, whose
# calendar date is when it began, not when it ends (read as an end, it came back as next year's).
_CHANGED = re.compile(
    r"\b(?:since|moved|relocated|started|joined|began|became|switched|retired|graduated|got married|quit|stopped|"
    r"gave up)\b",
    _FLAGS,
)
_CALENDAR = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b"
    r"|\b(?:19|20)\d\d\b",
    _FLAGS,
)
# ... unless the sentence also says when it ends, or speaks of a day near now.
_UNTIL = re.compile(
    r"\b(?:until|till|through|by|this|next|coming|today|tonight|tomorrow|yesterday|right now|at the moment)\b",
    _FLAGS,
)


def began(text: str) -> bool:
    """Whether ``text`` dates a change that happened ("moved to Lisbon on March 3"): a lasting fact."""
    return bool(_CHANGED.search(text) and _CALENDAR.search(text) and not _UNTIL.search(text))


# A stay that goes on ("I'm staying at a Hilton for two nights") ends with its nights.
_STAYING = re.compile(r"(?:\b(?:am|are|is)|'m|'re|'s)\s+\w+ing\b", _FLAGS)
# Most specific first, and the first that places a day decides: "until March 3rd" ends on the 3rd.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (kind, re.compile(pattern, _FLAGS))
    for kind, pattern in [
        ("span", rf"\bfor (?:the )?(?:next |coming )?{_COUNT} (?P<unit>minute|hour|day|night|week|month)s?\b"),
        ("in", rf"\bin {_COUNT} (?P<unit>minute|hour|day|week|month)s?\b"),
        ("date", rf"\b{_MONTH} {_NTH}\b"),
        ("date", rf"\b{_NTH} (?:of )?{_MONTH}"),
        ("nth", rf"\b(?:until|till|through|by) the {_NTH}\b"),
        ("month", rf"\b(?:until|till|through) {_MONTH}"),
        ("weekday", rf"\b(?P<pre>until|till|through|by|before|on|this|next|coming) {_DAY}\b(?! {_PARTS})"),
        ("today", r"\b(?:today|tonight|this (?:morning|afternoon|evening)|right now|at the moment)\b"),
        ("tomorrow", r"\btomorrow\b"),
        ("yesterday", r"\b(?:yesterday|last night)\b"),
        ("week", r"\b(?P<next>this|next) (?:week|weekend)\b"),
        ("month_end", r"\b(?P<next>this|next) month\b"),
        ("quarter", r"\bthis quarter\b"),
        ("year", r"\b(?P<next>this|next) year\b"),
    ]
]


def _end(day: date) -> float:
    return datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=UTC).timestamp()


def _month_number(text: str) -> int:
    return next(i for i, name in enumerate(_MONTHS, 1) if name.startswith(text.lower().rstrip(".")[:3]))


def _count(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[text.lower()]


def _last_of_month(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _following(today: date) -> tuple[int, int]:
    return today.year + today.month // 12, today.month % 12 + 1


def _placed(kind: str, found: re.Match[str], now: datetime) -> float | None:
    today = now.date()
    groups = found.groupdict()
    if kind in ("span", "in"):
        count, unit = _count(groups["count"]), groups["unit"].lower()
        if unit == "month":
            return (now + timedelta(days=30 * count)).timestamp()
        if unit == "night":  # "staying two nights": until the morning after the last
            return (now + timedelta(days=count)).timestamp()
        return (now + timedelta(**{f"{unit}s": count})).timestamp()
    if kind == "date":
        month, day = _month_number(groups["month"]), int(groups["nth"])
        if not 1 <= day <= calendar.monthrange(today.year, month)[1]:
            return None
        when = date(today.year, month, day)
        return _end(when if when >= today else date(today.year + 1, month, day))
    if kind == "nth":
        day, (year, month) = int(groups["nth"]), (today.year, today.month)
        if day < today.day:
            year, month = _following(today)
        while day > calendar.monthrange(year, month)[1]:  # "until the 31st" said in April: May 31
            year, month = _following(date(year, month, 1))
        return _end(date(year, month, day)) if day <= 31 else None
    if kind == "month":
        month = _month_number(groups["month"])
        return _end(_last_of_month(today.year + (month < today.month), month))
    if kind == "weekday":
        ahead = (_DAYS.index(groups["day"].lower()) - today.weekday()) % 7
        if ahead == 0 and groups["pre"].lower() == "next":
            ahead = 7
        return _end(today + timedelta(days=ahead))
    if kind in ("today", "tomorrow", "yesterday"):
        return _end(today + timedelta(days={"today": 0, "tomorrow": 1, "yesterday": -1}[kind]))
    nxt = groups.get("next", "").lower() == "next"
    if kind == "week":
        return _end(today + timedelta(days=6 - today.weekday() + 7 * nxt))
    if kind == "month_end":
        year, month = _following(today) if nxt else (today.year, today.month)
        return _end(_last_of_month(year, month))
    if kind == "quarter":
        return _end(_last_of_month(today.year, (today.month - 1) // 3 * 3 + 3))
    return _end(date(today.year + nxt, 12, 31))


def expires_at(text: str, *, now: datetime | None = None) -> float | None:
    """The end of the time ``text`` holds for (Unix seconds), or None when it names none.

    Args:
        text: one statement.
        now: when it was said (default: now).
    """
    if _LASTING.search(text) or began(text):
        return None
    now = now or datetime.now(UTC)
    past = bool(_PAST_SPAN.search(text))
    for kind, pattern in _PATTERNS:
        found = pattern.search(text)
        if found is None or (past and kind == "span"):
            continue
        if kind == "span" and found["unit"].lower() == "night" and not _STAYING.search(text):
            continue  # "staying for two nights" ends; "I work for three nights, then ..." is a habit
        try:
            end = _placed(kind, found, now)
        except (ValueError, OverflowError):  # February 29 of a common year, a span of a billion days
            end = None
        if end is not None:
            return end
    return None
