"""Attached files: checked by their bytes, saved once in the worktree out of git's sight, never
through a link the agent planted, upright, and gone with the worktree."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path

import pytest
from PIL import Image

from seeding import attachments
from seeding.attachments import AttachmentRefused, Upload, save
from seeding.tests.conftest import git
from seeding.worktrees import uncommitted_changes, worktree_remove


def png(size: tuple[int, int] = (4, 2)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (255, 0, 0)).save(out, format="PNG")
    return out.getvalue()


def rotated_photo() -> bytes:
    """A 4x2 JPEG whose EXIF says "rotate 90° clockwise to view" (orientation 6), as a phone
    held upright writes it."""
    img = Image.new("RGB", (4, 2), (0, 0, 255))
    exif = Image.Exif()
    exif[attachments.ORIENTATION] = 6
    out = io.BytesIO()
    img.save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\shot 1.png", "shot-1.png"),
        (".bashrc", "bashrc"),
        ("rm -rf $(x);.txt", "rm--rf-x-.txt"),
        ("été.log", "ete.log"),
        ("...", "file"),
    ],
)
def test_names_are_sanitised(given, kept):
    assert attachments.sanitize_name(given) == kept


def test_files_are_saved_in_order_private_and_out_of_git(linked):
    saved = save(linked, [Upload("b.png", png()), Upload("notes.txt", b"hello\n")])
    assert [a.name for a in saved] == ["b.png", "notes.txt"]
    assert [a.is_image for a in saved] == [True, False]
    for a in saved:
        path = Path(a.path)
        assert path.parent == linked / ".lab-attachments" and a.rel == f".lab-attachments/{path.name}"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # never executable
    assert Path(saved[1].path).read_bytes() == b"hello\n"
    assert uncommitted_changes(linked) == []  # git does not pick them up
    exclude = Path(git(linked, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude").strip())
    assert "/.lab-attachments/" in exclude.read_text().splitlines()


def test_a_photo_is_turned_upright_and_loses_its_exif(linked):
    [photo] = save(linked, [Upload("IMG_1.jpeg", rotated_photo())])
    with Image.open(photo.path) as img:
        assert img.size == (2, 4)
        assert img.getexif().get(attachments.ORIENTATION) is None
    assert photo.path.endswith(".jpg") and photo.media_type == "image/jpeg"


def test_an_image_is_known_by_its_bytes_not_its_name(linked):
    [shot] = save(linked, [Upload("shot.txt", png())])
    assert shot.is_image and shot.path.endswith("-shot.png")


@pytest.mark.parametrize(
    ("upload", "says"),
    [
        (Upload("a.bin", b"\x00\x01\x02binary"), "neither an image lab can attach nor UTF-8 text"),
        (Upload("big.txt", b"x" * (attachments.MAX_TEXT_BYTES + 1)), "a text file may be at most 1024 KB"),
        (Upload("big.png", png() + b"\0" * attachments.MAX_IMAGE_BYTES), "an image may be at most 5 MB"),
        (Upload("a.bmp", b"BM" + Image.new("RGB", (1, 1)).tobytes()), ""),
        (Upload("empty.txt", b""), "is empty"),
    ],
)
def test_a_refused_file_says_why_and_nothing_is_saved(linked, upload, says):
    if upload.name == "a.bmp":
        out = io.BytesIO()
        Image.new("RGB", (1, 1)).save(out, format="BMP")
        upload, says = Upload("a.bmp", out.getvalue()), "lab attaches PNG, JPEG, GIF and WebP images"
    with pytest.raises(AttachmentRefused, match=says):
        save(linked, [Upload("fine.txt", b"ok"), upload])
    assert not (linked / ".lab-attachments").exists()


def test_too_many_files_are_refused_with_the_limit(linked):
    with pytest.raises(AttachmentRefused, match="at most 10 can go with one message"):
        save(linked, [Upload(f"{i}.txt", b"x") for i in range(11)])


def test_a_link_the_agent_planted_is_never_written_through(linked, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, linked / ".lab-attachments")
    with pytest.raises(AttachmentRefused, match="not a folder lab made"):
        save(linked, [Upload("a.txt", b"x")])
    assert list(elsewhere.iterdir()) == []


def test_they_are_removed_with_the_worktree(repo, linked):
    save(linked, [Upload("a.txt", b"x")])
    worktree_remove(repository=repo, path=linked)  # no confirmation: they are no uncommitted work
    assert not linked.exists()


def test_the_thumbnail_reads_only_what_lab_saved(linked):
    [shot] = save(linked, [Upload("a.png", png())])
    name = Path(shot.path).name
    assert attachments.open_saved(str(linked), name) == (Path(shot.path).read_bytes(), "image/png")
    assert attachments.open_saved(str(linked), "../README.md") is None
    (linked / ".lab-attachments" / "0123abcd-link.png").symlink_to(linked / "README.md")
    assert attachments.open_saved(str(linked), "0123abcd-link.png") is None
