from __future__ import annotations

import pytest

from docsbot.downloadermiddlewares.retry import retry_after_seconds


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (b"120", 120.0),
        ("0", 0.0),
        (b"Thu, 01 Jan 1970 00:01:40 GMT", 60.0),  # an HTTP-date, 100 s after the epoch; now = 40
        (b"Thu, 01 Jan 1970 00:00:00 GMT", 0.0),  # in the past: no wait
        (b"soon", None),
        (b"-5", None),
        (None, None),
        (b"", None),
    ],
)
def test_retry_after_is_delay_seconds_or_an_http_date(value, seconds):
    assert retry_after_seconds(value, now=40.0) == seconds
