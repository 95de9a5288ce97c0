"""A background agent's own conversation at the run's URL with ?agent=<id>, and how the message
partial shows the new shapes (thinking, a collapsed detail, the link to an agent)."""

import pytest

from providers.schema import Message, MessageKind
from providers.testing import fake_append
from runs import services
from runs.rendering import message_html


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/side-1")


def test_it_shows_an_agent_s_own_conversation_read_only(authed_client, run, fake_provider, tmp_path):
    side = tmp_path / "agent-a1.jsonl"
    fake_append(side, kind="user_text", text="read the readme")
    fake_append(side, kind="assistant_text", text="It says **hi**.", state="idle")
    asked: list[str] = []

    def side_transcript(handle: object, agent: str) -> str:
        asked.append(agent)
        return str(side) if agent == "a1" else ""

    fake_provider.side_transcript = side_transcript  # offers the SideTranscripts capability
    body = authed_client.get(f"/runs/{run.pk}/?agent=a1").content.decode()
    assert "A background agent of" in body
    assert "read the readme" in body and "It says <strong>hi</strong>." in body
    assert 'id="composer"' not in body  # read-only
    assert authed_client.get(f"/runs/{run.pk}/?agent=zz").status_code == 404
    assert asked == ["a1", "zz"]


def test_a_malformed_agent_id_never_reaches_the_provider(authed_client, run, fake_provider):
    asked: list[str] = []
    fake_provider.side_transcript = lambda handle, agent: asked.append(agent) or ""
    for bad in ("../../etc/passwd", "a b", "", "x" * 65):
        assert authed_client.get(f"/runs/{run.pk}/", {"agent": bad}).status_code == 404
    assert asked == []


def test_without_the_capability_there_is_no_agent_page(authed_client, run):
    assert authed_client.get(f"/runs/{run.pk}/?agent=a1").status_code == 404


def test_thinking_is_collapsed_and_labelled_never_a_reply():
    html = message_html(Message(seq=0, kind=MessageKind.THINKING, text="I *think*"), "e0")
    assert '<details class="thinking"><summary>Thinking</summary>' in html
    assert "<em>think</em>" in html and "msg-assistant_text" not in html
    redacted = message_html(Message(seq=1, kind=MessageKind.THINKING), "e0")
    assert "Thinking (redacted)" in redacted


def test_a_line_with_detail_and_an_agent_links_relative_to_the_run():
    message = Message(
        seq=0, kind=MessageKind.LIFECYCLE, text="Agent finished: done", detail="# Report", side="a1"
    )
    html = message_html(message, "e0")
    assert "<summary>Agent finished: done</summary>" in html and "<h1>Report</h1>" in html
    assert 'href="?agent=a1"' in html


def test_a_plan_row_shows_its_markdown_open():
    message = Message(seq=0, kind=MessageKind.TOOL_USE, tool_name="ExitPlanMode", detail="# Plan\n\n1. x")
    html = message_html(message, "e0")
    assert '<details class="tool" open>' in html and "<h1>Plan</h1>" in html
