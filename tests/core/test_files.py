"""core.files: regular files are replaced in one rename; special files (a terminal, /dev/null, a FIFO,
stdout) are written in place and stay what they are; a target that cannot be written is one
OutputError before anything is created. Nothing here needs root, and nothing passes only as root."""

from __future__ import annotations

import os
import pty
import stat
import threading

import pytest

from core.errors import OutputError
from core.files import atomic_path, atomic_write_bytes, check_output, make_dir, open_output


def leftovers(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_a_regular_file_is_replaced_whole_or_not_at_all(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with open_output(target) as f:
            f.write("half of the new")
            raise RuntimeError("killed part-way")
    assert target.read_text() == "old\n" and leftovers(tmp_path) == ["out.txt"]  # no temporary file left either
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(tmp_path / "new.txt") as tmp:
            tmp.write_text("partial")
            raise KeyboardInterrupt
    assert leftovers(tmp_path) == ["out.txt"]  # a new file appears only when whole
    atomic_write_bytes(target, b"new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) & 0o044  # not mkstemp's 0600


def test_a_symlink_is_written_through_and_kept(tmp_path):
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    atomic_write_bytes(tmp_path / "link.txt", b"new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("adir", "adir: is a directory; give a file name"),
        ("missing/out.txt", "cannot write: no such directory"),
        ("afile/out.txt", "afile is not a directory"),
        ("readonly.txt", "readonly.txt: read-only; not replaced"),
    ],
)
def test_a_target_that_cannot_be_written_fails_before_anything_is_created(tmp_path, name, message):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("keep")
    (tmp_path / "readonly.txt").write_text("keep")
    (tmp_path / "readonly.txt").chmod(0o444)  # no write bit: refused even for root, who could write it
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    for write in (check_output, lambda p: atomic_write_bytes(p, b"x"), lambda p: open_output(p).__enter__()):
        with pytest.raises(OutputError, match=message):
            write(tmp_path / name)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before
    assert leftovers(tmp_path / "adir") == [] and (tmp_path / "readonly.txt").read_text() == "keep"


def test_dev_null_is_written_in_place():
    atomic_write_bytes("/dev/null", b"nothing\n")
    with open_output("/dev/null") as f:
        f.write("nothing\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()  # opening a FIFO blocks until the other end opens: the reader waits for our write
    atomic_write_bytes(fifo, b"through the pipe\n")
    reader.join(timeout=30)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode) and leftovers(tmp_path) == ["pipe"]


def test_a_terminal_is_written_in_place():
    controller, terminal = pty.openpty()
    try:
        path = os.ttyname(terminal)
        with open_output(path) as f:
            f.write("on the terminal\n")
        assert b"on the terminal" in os.read(controller, 1024)
        assert stat.S_ISCHR(os.stat(path).st_mode)
    finally:
        os.close(terminal)
        os.close(controller)


def test_dash_is_stdout(capsys):
    with open_output("-") as f:
        f.write("to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"
    assert not os.path.exists("-")


def test_dash_takes_bytes_too(capsysbinary):
    atomic_write_bytes("-", b"bytes to stdout\n")
    assert capsysbinary.readouterr().out == b"bytes to stdout\n"


def test_make_dir_names_a_file_in_the_way(tmp_path):
    (tmp_path / "afile").write_text("keep")
    with pytest.raises(OutputError, match="afile: not a directory"):
        make_dir(tmp_path / "afile")
    with pytest.raises(OutputError, match="cannot create the directory"):
        make_dir(tmp_path / "afile" / "run")
    assert make_dir(tmp_path / "a" / "b").is_dir() and (tmp_path / "afile").read_text() == "keep"
