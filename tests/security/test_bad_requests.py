"""Malformed requests get a 400 and one log line, never a 500 with a traceback: a form body in
a charset that cannot decode it (no login needed, only a csrftoken cookie) and an encoded path
escape under /static/. Driven through lab's real ASGI stack (lab.asgi.application, with its
static files handler), as daphne runs it."""

from __future__ import annotations

import logging

import pytest
from channels.testing import HttpCommunicator

from lab.asgi import application
from tests.security.support import HOST, ORIGIN

TOKEN = "a" * 32


def logged_lines(caplog) -> list[str]:
    """What lab's console handler writes for the captured records, filters included."""
    console = next(h for h in logging.getLogger().handlers if getattr(h, "name", "") == "console")
    lines = []
    for record in caplog.records:
        if console.filter(record):
            lines.append(logging.Formatter().format(record))
    return lines


async def asgi_request(method: str, path: str, body: bytes = b"", headers=()) -> tuple[int, bytes]:
    headers = [(b"host", HOST.encode()), *headers]
    communicator = HttpCommunicator(application, method, path, body=body, headers=headers)
    response = await communicator.get_response(timeout=10)
    return response["status"], response["body"]


# The probe's case: a form body in latin-1 with non-ASCII bytes is refused by Django (a form
# must be UTF-8), and its own 400 view then failed on the same body: a 500.
LATIN1 = ("application/x-www-form-urlencoded; charset=latin-1", b"username=\xe9\xff&password=x")
FORM_POSTS = [
    ("latin-1, bytes that are not ASCII", *LATIN1),
    ("an unknown charset", "application/x-www-form-urlencoded; charset=no-such-codec", b"username=x"),
    ("utf-8 that is not", "application/x-www-form-urlencoded; charset=utf-8", b"username=\xff\xfe"),
    (
        "multipart in latin-1",
        "multipart/form-data; boundary=b; charset=latin-1",
        b'--b\r\nContent-Disposition: form-data; name="u\xe9"\r\n\r\n\xff\r\n--b--\r\n',
    ),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("what", "content_type", "body"), FORM_POSTS, ids=[p[0] for p in FORM_POSTS])
async def test_a_form_post_lab_cannot_decode_is_a_400_in_one_log_line(what, content_type, body, caplog):
    headers = [
        (b"content-type", content_type.encode("latin-1")),
        (b"cookie", f"csrftoken={TOKEN}".encode()),
        (b"x-csrftoken", TOKEN.encode()),
        (b"origin", ORIGIN.encode()),
    ]
    with caplog.at_level(logging.INFO):
        status, _ = await asgi_request("POST", "/login/", body, headers)
    assert status < 500, status  # a 200 is the login form saying the credentials are wrong
    if (content_type, body) == LATIN1:
        assert status == 400
    lines = logged_lines(caplog)
    assert all("\n" not in line for line in lines), lines
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.exc_info]


STATIC_ESCAPES = [
    "/static/..%2flab%2fsettings.py",
    "/static/..%2f..%2fetc%2fpasswd",
    "/static/%2e%2e/lab/settings.py",
    "/static/..%5clab%5csettings.py",
    "/static/%00",
    "/static/css/%2e%2e%2f%2e%2e%2f%2e%2e%2flab/settings.py",
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", STATIC_ESCAPES)
async def test_a_static_path_that_escapes_is_a_400_or_404_in_one_log_line(path, caplog):
    with caplog.at_level(logging.INFO):
        status, body = await asgi_request("GET", path)
    assert status in (400, 404), status
    assert b"SECRET_KEY" not in body
    lines = logged_lines(caplog)
    assert all("\n" not in line for line in lines), lines
    if status == 400:
        assert len(lines) == 1, lines
