"""The runs list's rows (runs/rows.py): the state, what a run waits for, its last activity and
its agent, as the list page shows them."""

from __future__ import annotations

import re

import pytest

from providers.schema import Dialog, DialogKind, Question
from providers.testing import fake_raise_dialog
from runs import rows, services
from tests.factories import RunFactory


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/rows-1")


def test_waiting_for_says_what_is_asked_in_one_short_line():
    asks = Dialog(tool_use_id="t", kind=DialogKind.QUESTION, prompt="Which\nfruit?")
    assert rows.waiting_for(asks, "question") == "Which fruit?"
    form = Dialog(
        tool_use_id="t", kind=DialogKind.QUESTION, questions=(Question(prompt="x" * 500, options=()),)
    )
    assert len(rows.waiting_for(form, "question")) == rows.WAITING_MAX
    plan = Dialog(tool_use_id="t", kind=DialogKind.PLAN, body="# plan")
    assert rows.waiting_for(plan, "question") == "approval of a plan"
    assert rows.waiting_for(None, "needs_input") == "its terminal"
    assert rows.waiting_for(asks, "idle") == ""


def test_the_runs_list_shows_state_waiting_for_and_last_activity(authed_client, run):
    fake_raise_dialog(run.transcript_path, {"tool_use_id": "toolu_l", "prompt": "Deploy now?"})
    body = authed_client.get("/").content.decode()
    assert f'id="run-row-{run.pk}"' in body
    assert f'id="run-state-{run.pk}" class="badge state-question"' in body
    assert "waiting for: Deploy now?" in body
    assert f'href="/runs/{run.pk}/#dialog"' in body
    assert "Last activity" in body and " ago</time>" in body


def test_the_branch_column_shows_the_branch_and_the_agent_has_its_own(authed_client, run):
    body = authed_client.get("/").content.decode()
    branch_cell = re.search(r'<td class="run-branch">(.*?)</td>', body, re.S)
    assert branch_cell is not None
    assert branch_cell.group(1) == f"<code>{run.branch}</code>"  # not the provider's id beside it
    assert '<td class="run-agent">Fake Agent</td>' in body and "<th>Agent</th>" in body


def test_a_changed_row_is_asked_for_alone_and_drawn_as_in_the_list(authed_client, run, monkeypatch):
    others = RunFactory.create_batch(2)
    whole = authed_client.get("/").content.decode()
    drawn = []
    real = rows.run_row
    monkeypatch.setattr("runs.rows.run_row", lambda r: drawn.append(r.pk) or real(r))
    answer = authed_client.get(f"/?rows={run.pk}", headers={"HX-Request": "true"})
    assert answer.status_code == 200
    body = answer.content.decode()
    # One row read and drawn, not the list: a state change costs one row on every open list.
    assert drawn == [run.pk]
    assert body.count("<tr ") == 1 and all(f'id="run-row-{o.pk}"' not in body for o in others)
    # The same bytes as the list's row, swapped in place by its id.
    in_list = re.search(rf'<tr id="run-row-{run.pk}".*?</tr>', whole, re.S)
    assert in_list is not None
    assert body == in_list.group(0).replace('class="run-row">', 'class="run-row" hx-swap-oob="true">', 1)
    both = authed_client.get(f"/?rows={run.pk},{others[0].pk}").content.decode()
    assert both.count("hx-swap-oob") == 2


@pytest.mark.parametrize("asked", ["", "x", "1,,2", "1;2", ",".join(["1"] * 201)])
def test_a_malformed_rows_request_says_what_it_takes(authed_client, run, asked):
    answer = authed_client.get("/", {"rows": asked})
    assert answer.status_code == 400
    assert "run ids separated by commas" in answer.content.decode()
