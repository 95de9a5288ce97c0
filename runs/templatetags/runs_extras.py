import datetime

from django import template
from django.utils.safestring import SafeString, mark_safe

from hosts import identity
from providers.schema import Message
from runs import rendering
from runs.rendering import MESSAGE_TEXT_MAX, markdown_html, message_html, strip_ansi

register = template.Library()


@register.filter
def markdown(text: str) -> SafeString:
    # Safe because nh3 sanitized it: no raw HTML from a transcript survives markdown_html.
    return mark_safe(markdown_html(text))  # noqa: S308


@register.filter
def ansi_stripped(text: str) -> str:
    return strip_ansi(text)


@register.filter
def firstline(text: str) -> str:
    return text.strip().split("\n", 1)[0]


@register.filter
def rendered_message(message: Message, epoch: str) -> SafeString:
    """One message as the socket sends it (capped, cached): every path renders it the same."""
    return mark_safe(message_html(message, epoch))  # noqa: S308  (the template escaped it)


# A dialog's body (a plan, a file the agent asks to write) is cut like a message, so the panel
# that carries it stays far inside one websocket frame (live/frames.FRAME_MAX_BYTES), however
# large the text: a frame over daphne's limit drops the socket and the page with it.
@register.filter
def head(text: str) -> str:
    return text[:MESSAGE_TEXT_MAX]


@register.filter
def beyond(text: str) -> int:
    """How many characters `head` leaves out."""
    return max(0, len(text) - MESSAGE_TEXT_MAX)


@register.filter
def attachment_name(path: str) -> str:
    return rendering.attachment_name(path)


@register.filter
def epoch_time(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)


@register.simple_tag
def lab_host() -> str:
    """The host whose files this page shows (several machines): a fragment pushed by another
    host's runner is dropped by a page of this one (static/lab/connection.js)."""
    return identity.host_name()
