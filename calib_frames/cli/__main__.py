"""``python -m calib_frames.cli``: the command line."""

from calib_frames.cli import main

raise SystemExit(main())
