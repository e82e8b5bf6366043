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
and an example) or a read or write the system refused; 2 usage error; 3 a change found
tonight (``report --over batch --fail-on-change``, :mod:`calib_frames.cli.over_time`: a
nightly job fails loudly); 130 interrupted (Ctrl-C); 143 terminated (SIGTERM). Every
error is one line on stderr, never a traceback.
One module per subcommand; :mod:`calib_frames.cli.common` holds what they share.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO, cast

from calib_frames.exceptions import ArgumentError, CalibFramesError

__all__ = ["in_flags", "main"]


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """``--help`` shows every default and keeps the examples' lines as written.

    A default is added to an option's help unless the help already says it, the option is
    required, or it is unset (``None``, an empty list, a flag that is off).
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default  # 0 is a default to show; False (a flag that is off) is not
        unset = default is None or default is False or default == [] or default is argparse.SUPPRESS
        if "default" in text or action.required or unset:
            return text
        return super()._get_help_string(action) or text


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit code 2), defaults and examples in --help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

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


# the API keywords of the column roles, as the command line spells them
_ROLE = re.compile(
    r"\b(confidence|correct|weight|log_confidence|nll|tokens|bytes|words|by|tokens_by)="
    r"(\[\"COL\", \.\.\.\]|\"COL\"|'[^']*'|\"[^\"]*\"|\[[^\]]*\]|1\b)"
)


def in_flags(message: str) -> str:
    r"""A library message in the command line's words: ``confidence='p'`` → ``--confidence p``.

    The column roles' keywords become their flags (``tokens=1`` is ``--token-level``,
    ``by=['model', 'task']`` is ``--by model,task``, ``"COL"`` stays ``COL``).

    Examples
    --------
    >>> in_flags("column not found: confidence='prob'; name the column with confidence=\"COL\"")
    'column not found: --confidence prob; name the column with --confidence COL'
    >>> in_flags("pass tokens='tokens' if …, or tokens=1 if each row is one token")
    'pass --tokens tokens if …, or --token-level if each row is one token'
    """

    def flag(match: re.Match[str]) -> str:
        role, value = match.group(1), match.group(2)
        if role == "tokens" and value == "1":
            return "--token-level"
        if value.startswith("["):
            names = re.findall(r"'([^']*)'|\"([^\"]*)\"", value)
            value = ",".join(a or b for a, b in names)
            value = "COL,…" if value == "COL" else value
        return f"--{role.replace('_', '-')} {value.strip(chr(34) + chr(39))}"

    return _ROLE.sub(flag, message)


class _Terminated(BaseException):
    """SIGTERM (what job runners send to stop a job), raised where the process stands."""


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated


class _ClosedPipeTolerant:
    """Standard output that goes quiet when its reader closes the pipe (``… | head``).

    The rest of the run goes on (files are still written); what would have been printed
    is dropped, and nothing is said about it.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._closed = False

    def write(self, text: str) -> int:
        if not self._closed:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._close()
        return len(text)

    def flush(self) -> None:
        if not self._closed:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._close()

    def _close(self) -> None:
        self._closed = True
        try:  # the interpreter flushes the real stream at exit: let that go nowhere
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # a stream without a file descriptor (a test's)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring).

    Errors are one line on stderr: the package's own errors (their exit code) and the
    operating system's (an OSError: disk full, read-only or missing folder; exit 1). An
    interrupt (Ctrl-C, exit 130) or SIGTERM (exit 143) removes what the run was building;
    a reader that closes the pipe (``calib-frames compare … | head``) ends the printing
    quietly, the rest of the run goes on.

    Parameters
    ----------
    argv
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.
    """
    stdout = sys.stdout
    sys.stdout = cast("TextIO", _ClosedPipeTolerant(stdout))
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main_thread else None
    try:
        return _run(argv)
    finally:
        sys.stdout.flush()
        sys.stdout = stdout
        if on_main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = _parser().parse_args(argv)
        status: int = args.run(args)
    except CalibFramesError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        message = in_flags("; ".join(lines).replace(":; ", ": "))
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
    except _Terminated:
        print("calib-frames: terminated; no output was left half-written", file=sys.stderr)
        return 143
    return status
