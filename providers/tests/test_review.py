"""Diff comments as one message: what is refused, and the Markdown both CLIs get."""

from __future__ import annotations

import pytest

from providers import review

ONE = {"path": "a.py", "start": 3, "end": 3, "old": False, "code": ["+x = 1"], "text": "Why?"}


def test_one_comment_names_its_place_quotes_its_lines_and_says_it() -> None:
    [comment] = review.parse([ONE])
    assert review.markdown([comment]) == (
        "Review comments on your changes (1). Please address it:\n\n1. `a.py:3`\n```diff\n+x = 1\n```\nWhy?"
    )


def test_a_range_and_removed_lines_say_so() -> None:
    [comment] = review.parse([dict(ONE, start=4, end=9, old=True)])
    assert comment.place == "a.py:4-9 (removed lines; old file)"


@pytest.mark.parametrize(
    ("items", "said"),
    [
        ([], "no comments"),
        ("x", "no comments"),
        ([dict(ONE, text=" ")], "is empty"),
        ([dict(ONE, path="")], "has no file"),
        ([dict(ONE, start=0)], "has no line"),
        ([dict(ONE, start=5, end=4)], "has no line"),
        ([dict(ONE, code=[1])], "unreadable code lines"),
        ([dict(ONE, text="a\0b")], "NUL"),
        ([ONE] * (review.MAX_COMMENTS + 1), "At most"),
    ],
)
def test_bad_comments_are_refused_whole_with_the_reason(items: object, said: str) -> None:
    with pytest.raises(review.InvalidReview, match=said):
        review.parse(items)
