"""A pending dialog's panel goes to the page in one websocket frame, so however large the text
it carries (a plan, a file the agent asks to write), the panel stays inside the frame bound:
a frame over daphne's limit drops the socket, and the page with it."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from live.frames import FRAME_MAX_BYTES
from providers.schema import Dialog, DialogKind, Option, RunState
from runs.rendering import MESSAGE_TEXT_MAX
from tests.factories import RunFactory

HUGE = ("<b>x</b> & ünïcödé line\n" * 250_000)[: 5 * 1024 * 1024]  # ~5 MB, escaping grows it


def panel(dialog: Dialog) -> str:
    return render_to_string(
        "runs/detail.html#panel",
        {
            "run": RunFactory.build(pk=7),
            "state": RunState.QUESTION if dialog.kind == DialogKind.PLAN else RunState.NEEDS_INPUT,
            "dialog": dialog,
            "provider_name": "Agent",
            "oob": True,
        },
    )


@pytest.mark.parametrize("kind", [DialogKind.PLAN, DialogKind.APPROVAL])
def test_a_huge_dialog_body_fits_one_frame_and_says_what_it_leaves_out(kind: DialogKind) -> None:
    dialog = Dialog(
        tool_use_id="toolu_big", kind=kind, prompt="Write big.txt", header="Write",
        options=(Option("Allow once"), Option("Deny")), body=HUGE,
    )  # fmt: skip
    html = panel(dialog)
    assert len(html.encode()) < FRAME_MAX_BYTES
    assert f"{len(HUGE) - MESSAGE_TEXT_MAX} more characters are not shown here" in html
    assert "Allow once" in html  # the buttons are still there to answer it


def test_a_small_dialog_body_is_shown_whole() -> None:
    body = "# Plan\n\n1. Create hello.txt\n"
    html = panel(Dialog(tool_use_id="toolu_s", kind=DialogKind.PLAN, body=body, options=(Option("Approve"),)))
    assert "Create hello.txt" in html and "not shown here" not in html
