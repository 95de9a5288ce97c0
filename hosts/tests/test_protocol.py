"""What a runner accepts: lab's own signed message, for its host, fresh, still awaited."""

from __future__ import annotations

import time

import pytest

from hosts import protocol


def test_a_signed_fresh_message_for_this_host_is_accepted():
    protocol.verify(protocol.sign({"type": protocol.CALL, "host": "b", "verb": "rows"}), host="b")


def test_a_changed_field_breaks_the_signature():
    message = protocol.sign({"type": protocol.CALL, "host": "b", "verb": "rows"})
    with pytest.raises(protocol.Refused, match="signature"):
        protocol.verify({**message, "verb": "other"}, host="b")
    body = protocol.sign({"type": protocol.HTTP, "host": "b", "body": b"text=one"})
    with pytest.raises(protocol.Refused, match="signature"):
        protocol.verify({**body, "body": b"text=two"}, host="b")


def test_a_message_for_another_host_is_refused():
    with pytest.raises(protocol.Refused, match="for host 'a'"):
        protocol.verify(protocol.sign({"type": protocol.CALL, "host": "a"}), host="b")


def test_a_message_signed_with_another_key_is_refused(settings):
    message = protocol.sign({"type": protocol.CALL, "host": "b"})
    settings.SECRET_KEY = "another lab's key " * 4
    with pytest.raises(protocol.Refused, match="signature"):
        protocol.verify(message, host="b")


def test_an_old_message_or_one_nobody_waits_for_is_refused(monkeypatch):
    message = protocol.sign({"type": protocol.CALL, "host": "b", "deadline": time.time() + 5})
    later = time.time() + 10
    monkeypatch.setattr(protocol.time, "time", lambda: later)
    with pytest.raises(protocol.Refused, match="stopped waiting"):
        protocol.verify(message, host="b")
    monkeypatch.setattr(protocol.time, "time", lambda: later + protocol.MAX_AGE_S)
    with pytest.raises(protocol.Refused, match="older than"):
        protocol.verify(message, host="b")
