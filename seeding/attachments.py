"""Files the operator attaches to a message: checked, saved once in the run's worktree where the
agent reads them without a new permission prompt, and kept out of git.

They go to `<worktree>/.lab-attachments/`, which lab adds to the repository's `info/exclude`
(git never picks them up; `git worktree remove` deletes them with the worktree, since ignored
files are not "uncommitted work"). The agent can write in its worktree, so the folder is opened
without following links and each file is created new (never over one already there), 0600:
nothing lab saves is executable.

Only what the CLIs take is accepted: an image (PNG, JPEG, GIF, WebP, recognised by Pillow from
its bytes, never from its name or the browser's word) or UTF-8 text. A photo's EXIF rotation is
applied to its pixels (the model sees it upright) and its metadata dropped with it.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from providers.schema import Attachment
from seeding.seeder import append_exclude
from seeding.worktrees import git_path

FOLDER = ".lab-attachments"
EXCLUDE_ENTRY = f"/{FOLDER}/"
MAX_FILES = 10
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the model APIs' own per-image limit
MAX_TEXT_BYTES = 1024 * 1024
MAX_PIXELS = 40_000_000  # a decompression bomb is refused before it is decoded
IMAGE_FORMATS = {
    "PNG": ("png", "image/png"),
    "JPEG": ("jpg", "image/jpeg"),
    "GIF": ("gif", "image/gif"),
    "WEBP": ("webp", "image/webp"),
}
ORIENTATION = 0x0112
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# What a saved file's name looks like: lab's token, then the sanitised name.
SAVED_NAME = re.compile(r"[0-9a-f]{8}-[A-Za-z0-9._-]{1,80}")


class AttachmentRefused(ValueError):
    """A file lab will not attach; the message says why and the limit."""


@dataclass(frozen=True, slots=True)
class Upload:
    name: str  # as the browser gave it: never trusted for the type or the path
    data: bytes


def limits_text() -> str:
    return (
        f"images (PNG, JPEG, GIF, WebP) up to {MAX_IMAGE_BYTES // (1024 * 1024)} MB, "
        f"text files up to {MAX_TEXT_BYTES // 1024} KB, {MAX_FILES} files a message"
    )


def sanitize_name(name: str) -> str:
    """A name safe on any shell line and in a CLI's mention: no folder, no leading dot, ASCII
    letters, digits, '.', '_' and '-' only, at most 80 characters."""
    base = unicodedata.normalize("NFKD", name.replace("\\", "/").rsplit("/", 1)[-1])
    base = base.encode("ascii", "ignore").decode()
    base = _UNSAFE.sub("-", base).strip(".-_")
    return base[-80:].lstrip(".-_") or "file"


def check(upload: Upload) -> tuple[str, str, bytes, bool]:
    """(saved name's tail, media type, bytes to save, is_image) or AttachmentRefused."""
    name = sanitize_name(upload.name)
    if not upload.data:
        raise AttachmentRefused(f"“{upload.name}” is empty.")
    image = _image(upload, name)
    if image is not None:
        return image
    if len(upload.data) > MAX_TEXT_BYTES:
        raise AttachmentRefused(
            f"“{upload.name}” is {_size(len(upload.data))}: a text file may be at most "
            f"{MAX_TEXT_BYTES // 1024} KB."
        )
    try:
        text = upload.data.decode("utf-8")
    except UnicodeDecodeError:
        text = "\0"
    if "\0" in text:
        raise AttachmentRefused(
            f"“{upload.name}” is neither an image lab can attach nor UTF-8 text (accepted: {limits_text()})."
        )
    return name, "text/plain; charset=utf-8", upload.data, False


def _image(upload: Upload, name: str) -> tuple[str, str, bytes, bool] | None:
    try:
        with Image.open(io.BytesIO(upload.data)) as probe:
            fmt = probe.format or ""
            width, height = probe.size
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError):
        return None  # not an image: maybe text
    if fmt not in IMAGE_FORMATS:
        raise AttachmentRefused(
            f"“{upload.name}” is a {fmt or 'kind of'} image; lab attaches PNG, JPEG, GIF and WebP images."
        )
    if len(upload.data) > MAX_IMAGE_BYTES:
        raise AttachmentRefused(
            f"“{upload.name}” is {_size(len(upload.data))}: an image may be at most "
            f"{MAX_IMAGE_BYTES // (1024 * 1024)} MB."
        )
    if width * height > MAX_PIXELS:
        raise AttachmentRefused(
            f"“{upload.name}” is {width}×{height} pixels: at most {MAX_PIXELS:,} are accepted."
        )
    ext, media = IMAGE_FORMATS[fmt]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    data = upright(upload.data)
    return f"{stem[:75]}.{ext}", media, data, True


def upright(data: bytes) -> bytes:
    """A photo whose EXIF says it is rotated, with the rotation applied to its pixels (and its
    EXIF, GPS included, not kept); any other image byte for byte."""
    with Image.open(io.BytesIO(data)) as img:
        if img.getexif().get(ORIENTATION, 1) in (0, 1):
            return data
        fmt = img.format
        turned = ImageOps.exif_transpose(img)
        out = io.BytesIO()
        turned.save(out, format=fmt)
        return out.getvalue()


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{max(1, n // 1024)} KB"


def check_all(uploads: list[Upload]) -> list[tuple[str, str, bytes, bool]]:
    """Every upload checked before any is saved: one refusal and nothing is kept or sent."""
    if len(uploads) > MAX_FILES:
        raise AttachmentRefused(f"{len(uploads)} files: at most {MAX_FILES} can go with one message.")
    return [check(u) for u in uploads]


def save(worktree: Path, uploads: list[Upload]) -> list[Attachment]:
    """Check every upload, then save each once under the worktree's attachments folder, in
    order; returns them as the provider takes them."""
    checked = check_all(uploads)
    root = Path(os.path.realpath(worktree))
    append_exclude(git_path(root, "info/exclude"), (EXCLUDE_ENTRY,))
    saved: list[Attachment] = []
    dir_fd = _folder_fd(root)
    try:
        for upload, (name, media, data, is_image) in zip(uploads, checked, strict=True):
            final = f"{secrets.token_hex(4)}-{name}"
            fd = os.open(
                final,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=dir_fd,
            )
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            saved.append(
                Attachment(
                    path=str(root / FOLDER / final),
                    rel=f"{FOLDER}/{final}",
                    name=upload.name,
                    media_type=media,
                    is_image=is_image,
                )
            )
    finally:
        os.close(dir_fd)
    return saved


def _folder_fd(root: Path) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    root_fd = os.open(root, flags)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(FOLDER, 0o700, dir_fd=root_fd)
        try:
            return os.open(FOLDER, flags, dir_fd=root_fd)
        except OSError:
            raise AttachmentRefused(
                f"{root / FOLDER} is not a folder lab made (a link or a file is there); nothing was saved."
            ) from None
    finally:
        os.close(root_fd)


def open_saved(worktree: str, name: str) -> tuple[bytes, str] | None:
    """A saved attachment's bytes and media type, for the chat's thumbnail; None for a name lab
    did not give or a file that is not there (or not a regular file)."""
    if not worktree or not SAVED_NAME.fullmatch(name):
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        dir_fd = os.open(Path(worktree) / FOLDER, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_IMAGE_BYTES:
            return None
        data = f.read(MAX_IMAGE_BYTES + 1)
    ext = name.rsplit(".", 1)[-1].lower()
    media = {e: m for e, m in IMAGE_FORMATS.values()}.get(ext, "text/plain; charset=utf-8")
    return data, media
