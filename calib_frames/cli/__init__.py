"""The ``calib-frames`` command line (also ``python -m calib_frames``).

=============  ==========================================================================
command        what it does
=============  ==========================================================================
``compare``    print (and optionally write) the per-group comparison table
``stats``      write the mergeable bin statistics (and NLL sums) of the inputs, one batch
``merge``      fold statistics files into one (idempotent by batch id, order-free)
``report``     write the comparison table, bin statistics, HTML report and charts
=============  ==========================================================================

Exit codes: 0 success; 1 bad data (the message names the file or column, the row count
and an example); 2 usage error. Every error is one line on stderr, never a traceback.
One module per subcommand; :mod:`calib_frames.cli.common` holds what they share.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from calib_frames.exceptions import ArgumentError, CalibFramesError

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        raise ArgumentError(f"{message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    from calib_frames.cli import compare, merge, report, stats

    parser = _Parser(
        prog="calib-frames",
        description="How far to trust a model's probabilities: calibration and perplexity "
        "tables, grouped by model and task.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in (compare, report, stats, merge):
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, 1 bad data, 2 usage).

    Errors are one line on stderr: the package's own errors (their exit code) and the
    operating system's (an OSError: disk full, read-only or missing folder; exit 1).

    Parameters
    ----------
    argv
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.
    """
    try:
        args = _parser().parse_args(argv)
        status: int = args.run(args)
    except CalibFramesError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        message = "; ".join(lines).replace(":; ", ": ")
        print(f"calib-frames: error: {message}", file=sys.stderr)
        return error.exit_code
    except OSError as error:  # a write or read the system refused: disk full, read-only
        where = f"{error.filename}: " if error.filename else ""
        reason = error.strerror or str(error)
        print(f"calib-frames: error: {where}{reason}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("calib-frames: interrupted; no output was left half-written", file=sys.stderr)
        return 130
    return status
