"""The line a turn that ended in an error shows, for every shape its error may take."""

from __future__ import annotations

import pytest

from providers.codex.transcript import turn_error_text


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (
            {
                "message": "exceeded retry limit, last status: 503 Service Unavailable",
                "codex_error_info": {"response_too_many_failed_attempts": {"http_status_code": 503}},
            },
            "The turn failed after Codex's retries (last HTTP status 503): exceeded retry limit, last "
            "status: 503 Service Unavailable",
        ),
        (
            {"message": "stream closed", "codex_error_info": {"response_too_many_failed_attempts": {}}},
            "The turn failed after Codex's retries: stream closed",
        ),
        (
            {"message": "Quota exceeded.", "codex_error_info": "usage_limit_exceeded"},
            "The turn failed (usage limit exceeded): Quota exceeded.",
        ),
        ({"codex_error_info": "unauthorized"}, "The turn failed (unauthorized); Codex recorded no message."),
        ("connection reset", "The turn failed: connection reset"),
        ({}, "The turn failed; Codex recorded no message."),
        (7, "The turn failed; Codex recorded no cause."),
    ],
)
def test_a_failed_turn_says_what_codex_recorded_and_no_more(error, shown):
    assert turn_error_text(error) == shown
