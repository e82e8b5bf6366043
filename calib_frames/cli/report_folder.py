"""The folder ``calib-frames report`` writes: refused unless it is new, empty or a report's own.

A report is built in a hidden temporary sibling of its folder and swapped in whole (two
renames), so the folder only ever holds one run's files and a failed or interrupted run
leaves the previous report as it was. Because the swap replaces the folder, the folder is
refused *before any work* unless everything in it was written by an earlier report:

* it does not exist (its parent must), or it is empty;
* or it holds the marker file :data:`MANIFEST` and nothing but the files that marker lists
  (a user's ``NOTES.txt`` or an input kept there is never deleted: the run is refused and
  the message names them);
* it is not the current folder nor one that holds it (the swap would pull the folder from
  under the shell that runs the command);
* a symbolic link is written through: the folder it points to is the one checked and
  replaced, and the link stays; a link to nothing is refused.

Every refusal is an :class:`~calib_frames.exceptions.ArgumentError` (exit code 2) naming the
folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from calib_frames.exceptions import ArgumentError

__all__ = ["MANIFEST", "prepare", "swap_in"]

MANIFEST = ".calib-frames-report"
"""The file that marks a folder as a report's: JSON with the names of the files it wrote."""

_SHOWN = 3  # names of foreign files a refusal lists


def _report_files(folder: Path) -> set[str] | None:
    """The names the folder's marker lists (with the marker), or None when it is no report's."""
    try:
        written = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        names = written["files"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if written.get("written_by") != "calib-frames report" or not isinstance(names, list):
        return None
    return {str(name) for name in names} | {MANIFEST}


def _target(out: Path) -> Path:
    """The real folder behind ``--out``: absolute, through a symbolic link."""
    if out.is_symlink():
        target = out.resolve()
        if not target.exists():
            raise ArgumentError(
                f"--out {out}: a symbolic link to {target}, which does not exist; create "
                "that folder or give another --out"
            )
        return target
    return Path(os.path.abspath(out))


def prepare(out: Path) -> tuple[Path, Path]:
    """Check ``--out`` and make the temporary folder to build the report in.

    Parameters
    ----------
    out
        The ``--out`` folder as given.

    Returns
    -------
    tuple of Path
        The real folder that will be replaced (``out`` itself, or what its link points to)
        and the fresh, empty staging folder beside it.

    Raises
    ------
    ArgumentError
        ``out`` is a file, a link to nothing, the current folder or one holding it, its
        parent is missing, or it holds anything an earlier report did not write.
    """
    target = _target(out)
    if target.exists() and not target.is_dir():
        raise ArgumentError(f"--out {out}: exists and is not a directory")
    if not target.parent.is_dir():
        raise ArgumentError(f"--out {out}: directory {target.parent} does not exist")
    here = Path.cwd().resolve()
    if target.exists() and (target.resolve() == here or target.resolve() in here.parents):
        raise ArgumentError(
            f"--out {out}: is the current folder or holds it; a report replaces its folder "
            "whole, so give a folder of its own (e.g. --out report)"
        )
    if target.is_dir():
        present = {entry.name for entry in target.iterdir()}
        expected = _report_files(target) if present else set()
        foreign = sorted(present - (expected or set()))
        if foreign:
            shown = ", ".join(foreign[:_SHOWN]) + (" …" if len(foreign) > _SHOWN else "")
            raise ArgumentError(
                f"--out {out}: the folder holds files no calib-frames report wrote "
                f"({len(foreign)}: {shown}); a report replaces its folder whole, so move "
                "them or give a new or empty folder"
            )
    staging = Path(
        tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    )
    umask = os.umask(0o022)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # as mkdir would make it (mkdtemp makes it private)
    return target, staging


def swap_in(staging: Path, target: Path, written: list[str]) -> None:
    """Mark ``staging`` as a report's and put it in place of ``target`` (two renames).

    Never two runs' files side by side; if a rename fails, the previous folder is left (or
    put back) where it was and no temporary folder is left beside it.
    """
    (staging / MANIFEST).write_text(
        json.dumps({"written_by": "calib-frames report", "files": written}, indent=1) + "\n",
        encoding="utf-8",
    )
    if not target.exists():
        os.replace(staging, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
    try:
        os.replace(target, old / target.name)
        try:
            os.replace(staging, target)
        except OSError:
            os.replace(old / target.name, target)
            raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
