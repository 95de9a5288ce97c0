"""What a dialog's buttons put first: the option the adapter marks as the safest way to go
ahead (Claude Code's plan: approve and ask before each action), never the riskiest."""

from __future__ import annotations

import re

from django.template.loader import render_to_string

from providers.schema import Dialog, DialogKind, Option, RunState
from tests.factories import RunFactory

# The shape of Claude Code's plan picker: the row that gives the agent the most room comes first.
OPTIONS = (
    Option("Approve — switch to auto mode"),
    Option("Approve — ask before each action", preferred=True),
    Option("Reject with feedback", takes_text=True),
    Option("Reject — keep planning"),
)


def buttons(dialog: Dialog) -> list[tuple[str, str, str]]:
    html = render_to_string(
        "runs/detail.html#panel",
        {
            "run": RunFactory.build(pk=7),
            "state": RunState.QUESTION,
            "dialog": dialog,
            "provider_name": "Agent",
        },
    )
    return re.findall(r'<button type="submit" name="answers-0" value="(\d)"([^>]*)>([^<]*)<', html)


def test_a_plans_first_and_primary_button_is_the_preferred_option() -> None:
    shown = buttons(Dialog(tool_use_id="toolu_plan", kind=DialogKind.PLAN, options=OPTIONS, body="# Plan"))
    # The first button is the one Enter presses and the eye goes to.
    value, attrs, label = shown[0]
    assert (value, label) == ("1", "Approve — ask before each action") and "primary" in attrs
    # Each button still answers its own row of the CLI's picker.
    assert sorted((v, lab) for v, _a, lab in shown) == [(str(i), o.label) for i, o in enumerate(OPTIONS)]
    assert all("primary" not in a for _v, a, _l in shown[1:])


# Without a plan file the CLI shows two rows; the adapter marks the others not offered (their
# indexes stay: answers are positional).
NO_PLAN = tuple(Option(o.label, preferred=o.preferred, offered=i in (1, 3)) for i, o in enumerate(OPTIONS))


def test_without_a_plan_file_the_preferred_option_still_comes_first() -> None:
    shown = buttons(Dialog(tool_use_id="toolu_plan", kind=DialogKind.PLAN, options=NO_PLAN))
    assert [(v, lab) for v, _a, lab in shown] == [
        ("1", "Approve — ask before each action"),
        ("3", "Reject — keep planning"),
    ]


def feedback_page(option: Option) -> str:
    dialog = Dialog(
        tool_use_id="toolu_a",
        kind=DialogKind.APPROVAL,
        header="Bash",
        prompt="Run ls",
        options=(Option("Allow once"), option),
    )
    return render_to_string(
        "runs/dialog.html", {"run": RunFactory.build(pk=7), "dialog": dialog, "provider_name": "Agent"}
    )


def test_an_option_that_needs_its_text_asks_for_it_before_sending() -> None:
    html = feedback_page(Option("Deny, and say why", takes_text=True, needs_text=True, denies=True))
    # static/lab/dialog.js stops a click on a data-needs-text button while the field is empty.
    assert re.search(r'<button [^>]*value="1"[^>]*\bdata-needs-text\b', html)
    assert "Feedback for “Deny, and say why” <input" in html


def test_an_option_whose_text_is_optional_sends_without_it() -> None:
    # A CLI that declines the same with or without the operator's text: the page says the text
    # is optional and lets the button go without it.
    html = feedback_page(Option("No, and tell it what to do", takes_text=True, denies=True))
    assert "data-needs-text" not in html
    assert "Feedback for “No, and tell it what to do” (optional)" in html
    assert re.search(r'value="1" class="[^"]*\bdeny\b', html)
