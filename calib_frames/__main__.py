"""``python -m calib_frames``: the command line (see :mod:`calib_frames.cli`)."""

from calib_frames.cli import main

raise SystemExit(main())
