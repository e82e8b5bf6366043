"""The installed version of calib_frames, read from the package metadata once."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__: str = version("calib-frames")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"
