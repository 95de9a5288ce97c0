"""Case 8: output. Transcript content is data: `<script>`, `<img onerror>`, `javascript:` links,
raw HTML in Markdown and ANSI/OSC sequences render inert on the run page and in what the socket
pushes. Every served page carries a nonce CSP without 'unsafe-inline'/'unsafe-eval'; every
script has the nonce and a src; no inline handlers; htmx's eval is off."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from accounts.models import LoginLink
from live.frames import catch_up_html
from providers.testing import fake_append
from runs import services

HOSTILE = [
    "<script>alert('xss-script')</script>",
    "<img src=x onerror=alert('xss-img')>",
    "<svg onload=alert('xss-svg')></svg>",
    "<iframe src=javascript:alert('xss-iframe')></iframe>",
    "[click](javascript:alert('xss-link'))",
    "[click](JaVaScRiPt:alert('xss-link2'))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![pic](javascript:alert('xss-image'))",
    "<a href=\"javascript:alert('xss-a')\">raw anchor</a>",
    '<div style="background:url(javascript:alert(1))" onclick="alert(1)">raw div</div>',
    "<details open ontoggle=alert('xss-details')>x</details>",
    "<form action=/logout/ method=post><button>raw form</button></form>",
    "<meta http-equiv=refresh content='0;url=javascript:alert(1)'>",
    '<base href="http://evil.example/">',
    "```html\n<script>alert('in-code')</script>\n```",
    "`<img src=x onerror=alert(1)>`",
    "<div hx-get=/runs/new/ hx-trigger=load>htmx attrs</div>",
    "\x1b[31mred\x1b[0m \x1b]8;;javascript:alert('osc8')\x1b\\osc link\x1b]8;;\x1b\\",
    "\x1b]52;c;cm0gLXJmIH4=\x07 clipboard \x1b]0;title\x07 \x1bP+q\x1b\\ dcs",
]
KINDS = ["assistant_text", "user_text", "tool_result", "lifecycle", "tool_use", "thinking"]


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.script_bodies: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.script_bodies.append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def assert_inert(html: str) -> None:
    page = parse(html)
    for tag, attrs in page.tags:
        assert tag not in ("script", "iframe", "svg", "img", "object", "embed", "meta", "base", "form"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert not name.startswith("hx-") or tag in ("ol", "li"), (tag, name)  # lab's own wrappers only
            if name in ("href", "src", "action", "formaction", "style") and value:
                assert not re.match(r"\s*(javascript|data|vbscript):", value, re.I), (tag, name, value)


@pytest.fixture
def run(fake_provider, git_repo, db):
    return services.run_start(provider_id="fake", repository=git_repo, branch="lab/out")


def _transcript_region(body: str) -> str:
    start = body.index('<ol id="transcript"')
    return body[start : body.index("</ol>", start) + 5]


@pytest.mark.django_db
@pytest.mark.parametrize("kind", KINDS)
def test_hostile_transcript_content_renders_inert_on_the_run_page(authed_client, run, kind):
    for text in HOSTILE:
        fake_append(run.transcript_path, kind=kind, text=text)
    body = authed_client.get(f"/runs/{run.pk}/").content.decode()
    region = _transcript_region(body)
    assert region.count('<li id="msg-') == len(HOSTILE)
    assert_inert(region)
    if kind != "tool_use":  # the fake's tool_use carries no text
        assert "raw anchor" in region  # shown as text, not dropped silently


@pytest.mark.django_db
def test_hostile_transcript_content_renders_inert_in_what_the_socket_pushes(run):
    for text in HOSTILE:
        fake_append(run.transcript_path, kind="assistant_text", text=text)
    html, epoch, _seq = catch_up_html(run, "", -1)
    pushed = html.split('<div id="cursor"')[0]
    assert pushed.count('<li id="msg-') == len(HOSTILE)  # every message pushed, none dropped
    assert "raw anchor" in pushed  # shown as text
    assert_inert(pushed)
    html, _epoch, _seq = catch_up_html(run, epoch, 2)  # the incremental (append) shape too
    pushed = html.split('<div id="cursor"')[0]
    assert pushed.count('<li id="msg-') == len(HOSTILE) - 3
    assert "raw anchor" in pushed
    assert_inert(pushed)


@pytest.mark.django_db
def test_markdown_keeps_only_safe_links(authed_client, run):
    fake_append(
        run.transcript_path, kind="assistant_text", text="[ok](https://example.com/x) [m](mailto:a@b.c)"
    )
    region = _transcript_region(authed_client.get(f"/runs/{run.pk}/").content.decode())
    anchors = [attrs for tag, attrs in parse(region).tags if tag == "a"]
    assert [a["href"] for a in anchors] == ["https://example.com/x", "mailto:a@b.c"]
    assert all("noopener" in (a.get("rel") or "") for a in anchors)


@pytest.mark.django_db
def test_no_terminal_escape_reaches_the_page(authed_client, run):
    for kind in KINDS:
        fake_append(run.transcript_path, kind=kind, text="\x1b[31mred\x1b[0m \x1b]0;title\x07")
    region = _transcript_region(authed_client.get(f"/runs/{run.pk}/").content.decode())
    assert "\x1b" not in region and "\x07" not in region


@pytest.mark.django_db
def test_the_escapes_are_gone_from_markdown_and_lifecycle(authed_client, run):
    for kind in ("assistant_text", "lifecycle"):
        fake_append(
            run.transcript_path,
            kind=kind,
            text="\x1b[31mred\x1b[0m \x1b]8;;javascript:x\x1b\\l\x1b]8;;\x1b\\",
        )
    region = _transcript_region(authed_client.get(f"/runs/{run.pk}/").content.decode())
    assert "\x1b" not in region and "javascript" not in region


# --- every served page: CSP, scripts, handlers, htmx config ---------------------------------


def _served_pages(client, operator, run) -> dict[str, str]:
    from django.test import Client

    anon = Client()
    token = LoginLink.issue(operator)
    pages = {
        "/login/": anon.get("/login/"),
        f"/account/once/{token}/": anon.get(f"/account/once/{token}/"),
    }
    client.force_login(operator)
    for path in (
        "/",
        "/runs/new/",
        f"/runs/{run.pk}/",
        "/providers/",
        "/account/password/",
        "/admin/",
        "/admin/runs/run/",
        f"/admin/runs/run/{run.pk}/change/",
        "/admin/auth/user/",
        "/admin/auth/user/add/",
        "/admin/password_change/",
    ):
        pages[path] = client.get(path)
    for path, response in pages.items():
        assert response.status_code == 200, (path, response.status_code)
    return pages


def _csp(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    out = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


@pytest.mark.django_db
def test_every_page_has_a_strict_nonce_csp_and_only_nonced_external_scripts(client, operator, run):
    for path, response in _served_pages(client, operator, run).items():
        csp = _csp(response)
        scripts = csp["script-src"]
        nonces = [w for w in scripts if w.startswith("'nonce-")]
        assert len(nonces) == 1, (path, scripts)
        nonce = nonces[0][len("'nonce-") : -1]
        for directive in ("script-src", "style-src", "default-src"):
            assert "'unsafe-inline'" not in csp.get(directive, []), (path, directive)
            assert "'unsafe-eval'" not in csp.get(directive, []), (path, directive)
            assert "*" not in csp.get(directive, []), (path, directive)
        assert csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'none'"]
        assert csp["frame-ancestors"] == ["'none'"]
        page = parse(response.content.decode())
        for tag, attrs in page.tags:
            if tag == "script":
                if attrs.get("type") in ("application/json", "importmap"):
                    continue  # data blocks (json_script): never executed
                assert attrs.get("src"), (path, attrs)
                assert attrs.get("nonce") == nonce, (path, attrs)
            for name in attrs:
                assert not name.startswith("on"), (path, tag, name)
            for name in ("href", "src", "action"):
                assert not re.match(r"\s*javascript:", attrs.get(name) or "", re.I), (path, tag, name)
        assert not page.script_bodies or all(
            attrs.get("type") == "application/json"
            for tag, attrs in page.tags
            if tag == "script" and not attrs.get("src")
        ), path
        assert response["X-Frame-Options"] == "DENY"
        assert response["X-Content-Type-Options"] == "nosniff"


@pytest.mark.django_db
def test_each_response_gets_a_fresh_nonce(authed_client):
    first = _csp(authed_client.get("/"))["script-src"]
    second = _csp(authed_client.get("/"))["script-src"]
    assert first != second


@pytest.mark.django_db
def test_htmx_eval_and_script_tags_are_off_on_lab_pages(authed_client, run):
    for path in ("/", f"/runs/{run.pk}/", "/runs/new/", "/providers/"):
        page = parse(authed_client.get(path).content.decode())
        (config,) = [a["content"] for t, a in page.tags if t == "meta" and a.get("name") == "htmx-config"]
        config = json.loads(config)
        assert config["allowEval"] is False
        assert config["allowScriptTags"] is False
        assert config["selfRequestsOnly"] is True


@pytest.mark.parametrize("kind", KINDS)
def test_every_message_field_is_escaped_in_the_pushed_partial(kind):
    from providers.schema import Message, MessageKind
    from runs.rendering import message_html

    for text in HOSTILE:
        message = Message(
            seq=0, kind=MessageKind(kind), text=text, tool_name=text, tool_input=text, native_id=text
        )
        assert_inert(message_html(message, "e0"))
        # The collapsed detail (a summary, a plan, an agent's report) and the side id too.
        detailed = Message(seq=1, kind=MessageKind(kind), text=text, detail=text, side=text)
        assert_inert(message_html(detailed, "e0"))
