"""Command line: the comparison table of many models, from prediction and token files.

    calib-frames compare PREDICTIONS [--tokens TOKENS] [--by model --by task] [--bins 10]
                         [--output table.csv]

Files are read lazily by extension (.parquet, .csv, .jsonl/.ndjson) and aggregated on
polars' streaming engine, so they may be larger than memory.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

from calib_frames.binning import Binning
from calib_frames.compare import comparison_table
from calib_frames.validation import CalibrationInputError
from calib_frames.metrics import METRIC_COLUMNS, calibration_metrics
from calib_frames.perplexity import PERPLEXITY_COLUMNS, SUM_COLUMNS, perplexity

__all__ = ["main", "scan"]

_SCANNERS: dict[str, Callable[[Path], pl.LazyFrame]] = {
    ".parquet": pl.scan_parquet,
    ".csv": pl.scan_csv,
    ".jsonl": pl.scan_ndjson,
    ".ndjson": pl.scan_ndjson,
}
_WRITERS = {".csv": "write_csv", ".parquet": "write_parquet", ".json": "write_json"}
_ALL_METRICS = {*METRIC_COLUMNS, *SUM_COLUMNS, *PERPLEXITY_COLUMNS}
_SUMMARY = (
    "n",
    "accuracy",
    "overconfidence",
    "ece",
    "mce",
    "brier",
    "log_loss",
    "perplexity",
    "bits_per_byte",
)


def scan(path: str | Path) -> pl.LazyFrame:
    """A LazyFrame over a .parquet, .csv or .jsonl/.ndjson file (chosen by extension)."""
    path = Path(path)
    scanner = _SCANNERS.get(path.suffix.lower())
    if scanner is None:
        raise CalibrationInputError(
            f"{path}: unknown file type {path.suffix!r}; use one of {sorted(_SCANNERS)}"
        )
    if not path.exists():
        raise CalibrationInputError(f"{path}: no such file")
    return scanner(path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="calib-frames", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    compare = commands.add_parser(
        "compare", help="print (and optionally write) the per-group comparison table"
    )
    compare.add_argument("predictions", type=Path, help="file with one row per prediction")
    compare.add_argument("--tokens", type=Path, help="file with token or sequence NLL rows")
    compare.add_argument(
        "--by", action="append", default=None, help="group key column (repeatable)"
    )
    compare.add_argument("--bins", type=int, default=10, help="equal-width bins (default 10)")
    compare.add_argument(
        "--closed", choices=["left", "right"], default="left", help="bin closedness"
    )
    compare.add_argument("--confidence", default="confidence", help="confidence column")
    compare.add_argument("--correct", default="correct", help="outcome column (bool or 0/1)")
    compare.add_argument("--weight", default=None, help="optional row-weight column")
    compare.add_argument("--nll", default="nll", help="NLL column (nats) of the token file")
    compare.add_argument("--token-count", default=None, help="tokens-per-row column")
    compare.add_argument("--bytes", default=None, help="bytes-per-row column")
    compare.add_argument("--words", default=None, help="words-per-row column")
    compare.add_argument(
        "--tokens-by",
        action="append",
        default=None,
        help="group keys of the token file (default: those of --by it has)",
    )
    compare.add_argument("--output", type=Path, help="write the table (.csv, .parquet, .json)")
    compare.add_argument(
        "--all-columns",
        action="store_true",
        help="print every column (default: keys and a summary; --output always has all)",
    )
    return parser


def _compare(args: argparse.Namespace) -> tuple[pl.DataFrame, list[str]]:
    by = args.by or []
    table = calibration_metrics(
        scan(args.predictions),
        confidence=args.confidence,
        correct=args.correct,
        weight=args.weight,
        by=by,
        bins=Binning.uniform(args.bins, closed=args.closed),
    )
    if args.tokens is not None:
        tokens = scan(args.tokens)
        names = tokens.collect_schema().names()
        tokens_by = args.tokens_by or [key for key in by if key in names]
        ppl = perplexity(
            tokens,
            nll=args.nll,
            tokens=args.token_count,
            bytes=args.bytes,
            words=args.words,
            by=tokens_by,
        )
        table = comparison_table(table, ppl)
    result = table.collect()
    keys = [name for name in result.columns if name not in _ALL_METRICS]
    return result, keys


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``calib-frames`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        inputs = {args.predictions.resolve(), *([args.tokens.resolve()] if args.tokens else [])}
        if args.output is not None and args.output.resolve() in inputs:
            raise CalibrationInputError(f"--output {args.output} would overwrite an input file")
        writer = None
        if args.output is not None:
            writer = _WRITERS.get(args.output.suffix.lower())
            if writer is None:
                raise CalibrationInputError(
                    f"--output {args.output}: unknown file type; use one of {sorted(_WRITERS)}"
                )
        table, keys = _compare(args)
    except CalibrationInputError as error:
        message = "; ".join(line.strip() for line in str(error).splitlines())
        print(f"calib-frames: error: {message}", file=sys.stderr)
        return 2
    shown = (
        table
        if args.all_columns
        else table.select(*keys, *(name for name in _SUMMARY if name in table.columns))
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=10_000, float_precision=4):
        print(shown)
    if args.output is not None and writer is not None:
        getattr(table, writer)(args.output)
        print(f"wrote {table.height} rows to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
