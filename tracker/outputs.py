"""Where a command's results go, checked before the work starts.

A tracking run or a calibration can take minutes; finding only at the end that
``--out`` names a missing folder, a file standing where a folder should be, or a place
that cannot be written loses that work. :func:`check_output` tries the place at once
(creating the file and removing it again, never touching one that exists) and raises
:class:`~tracker.errors.UserError` naming the option, the problem and the fix;
:func:`write_output` writes the result, turning a late failure (a full disk) into the
same one line.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from .errors import UserError

__all__ = ["check_output", "write_output", "check_image_output"]


def _problem(path: Path, e: OSError) -> str:
    parent = path.parent
    if e.errno == errno.ENOENT:
        return f"the folder {parent} does not exist; create it first or give another path"
    if e.errno in (errno.ENOTDIR, errno.EEXIST):
        file = next((a for a in reversed(path.parents) if a.is_file()), parent)
        return f"{file} is a file, not a folder; give a path inside a folder"
    if e.errno == errno.EISDIR:
        return "this is a folder; give a file name inside it"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        if path.is_file():
            return "the file cannot be written (read-only or permission denied); give another path"
        return f"the folder {parent} cannot be written here (permission denied or read-only); give another path"
    if e.errno == errno.ENOSPC:
        return "the disk is full; free some space or give a path on another disk"
    return f"cannot write there ({e.strerror or e}); give another path"


def check_output(path: str | os.PathLike, option: str = "--out", make_folders: bool = False) -> Path:
    """``path`` as a Path once a file can be written there; UserError (one line naming
    ``option``) when it cannot. A file already there is left as it is. ``make_folders``:
    create the missing folders on the way first."""
    p = Path(path).expanduser()
    if make_folders:
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"{option} {path}: {_problem(p, e)}") from None
    if p.is_dir():
        raise UserError(f"{option} {path}: this is a folder; give a file name inside it")
    try:
        if p.exists():
            with open(p, "ab"):  # appends nothing: only asks whether it may be written
                pass
        else:
            with open(p, "xb"):
                pass
            p.unlink()
    except OSError as e:
        raise UserError(f"{option} {path}: {_problem(p, e)}") from None
    return p


def check_image_output(path: str | os.PathLike, option: str) -> Path:
    """As :func:`check_output`, and the name's extension one OpenCV writes pictures as."""
    import cv2

    p = Path(path).expanduser()
    try:
        ok = bool(p.suffix) and cv2.haveImageWriter(str(p))
    except cv2.error:
        ok = False
    if not ok:
        raise UserError(f"{option} {path}: cannot write a picture as '{p.suffix or 'no extension'}'; "
                        f"use a name ending in .png or .jpg")
    return check_output(p, option)


def write_output(path: str | os.PathLike, text: str, option: str = "--out") -> None:
    """Write ``text`` to ``path``; an OSError becomes one line naming ``option``."""
    p = Path(path).expanduser()
    try:
        p.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"{option} {path}: {_problem(p, e)}") from None
