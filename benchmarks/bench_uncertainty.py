#!/usr/bin/env python
"""Benchmark: bootstrap intervals, noise floor and paired tests against one plain evaluation
and against the usual ways of bootstrapping (a numpy loop over groups, scipy.stats.bootstrap).

Run from the repository root::

    python -m benchmarks.bench_uncertainty                      # 10^5 rows
    python -m benchmarks.bench_uncertainty --rows 1e6 --row-bootstrap   # the reported run
    python -m benchmarks.bench_uncertainty --quick              # seconds (smoke test)

Workload: ``--rows`` predictions in ``--groups`` groups (Int32 key ``g``), confidence
~ Beta(3, 1.5), outcome ~ Bernoulli(confidence ** 1.3) (overconfident), 10 bins,
``--replicates`` bootstrap replicates (200), level 0.95. Perplexity: the same number of
document rows (nll, tokens, bytes). Paired: two models on ``rows / 2`` shared items.

Methods (best of ``--repeats`` wall-clock seconds, repeats interleaved by
``harness.time_interleaved``; the numpy loop, scipy, the row bootstrap and the paired tests
run once; ``ratio`` = seconds / plain metrics, or / plain perplexity for the perplexity
table; CPU seconds (``time.process_time``, all threads) of the same run in a second table: on
a shared machine the CPU ratio is the steadier one):

plain_metrics        ``cf.calibration_metrics(df, by="g")``: one evaluation, every metric.
cf_intervals         ``calibration_intervals(df, by="g")``: bin statistics (one pass) plus
                     bin-level resampling, intervals of 12 metrics.
cf_from_stats        ``intervals_from_bin_statistics(stats)`` alone (the bin statistics
                     already computed, as in the report).
cf_row_bootstrap     ``calibration_intervals(..., resample="rows")``: the exact row-level
                     Poisson bootstrap (rows × replicates; ``--row-bootstrap`` to run it).
numpy_group_loop     a Python loop over groups; per group the replicates are vectorised
                     (an index matrix (replicates, n), bincount over replicate × bin): the
                     same 12 metrics, percentile intervals.
scipy_bootstrap_x G  ``scipy.stats.bootstrap`` (paired, vectorised, percentile) of the ECE
                     alone for one group, times the number of groups.
cf_noise_floor       ``calibration_noise_floor(df, by="g")`` (the exact null: no draws).
plain_perplexity     ``cf.perplexity(docs, tokens="tokens", bytes="bytes", by="g")``.
cf_ppl_intervals     ``perplexity_intervals(docs, ...)`` (one pass of moments, then draws).
cf_paired            ``paired_comparison`` of two models on rows/2 shared items per group
                     (permutation p-values and bootstrap intervals, ``--replicates``).

Cross-checks (not timed): the noise floor's observed ECE and counts equal plain_metrics'
(exact counts, 1e-9); ``cf_from_stats`` gives the same intervals as ``cf_intervals`` (same
bins, same seed); the bin-level RMSCE lower bounds are within Monte-Carlo noise of the
numpy loop's (median |difference| / interval width below 0.25; the ECE's interval is a
test inversion, not a bootstrap); the point
perplexity inside ``cf_ppl_intervals``' interval for every group. Any failure: exit 1.
``--quick``: 2·10^4 rows, 20 groups, 50 replicates, one repeat, every method.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # also runnable as a script
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import numpy as np
import polars as pl

import calib_frames as cf
from benchmarks import harness, report
from benchmarks.peers import Peer, Registry, Result
from benchmarks.workload import Source, Spec, frame_source
from calib_frames.estimators.bootstrap import calibration_intervals, intervals_from_bin_statistics
from calib_frames.estimators.noise import calibration_noise_floor
from calib_frames.estimators.paired import paired_comparison
from calib_frames.estimators.perplexity_bootstrap import perplexity_intervals

DRIFT_LIMIT = 0.25  # median |RMSCE lower bound difference| / width, bins vs the numpy loop


def predictions(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(3, 1.5, rows)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, rows).astype(np.int32),
            "confidence": p,
            "correct": rng.random(rows) < p**1.3,
        }
    )


def documents(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed + 1)
    tokens = rng.integers(5, 500, rows)
    return pl.DataFrame(
        {
            "g": rng.integers(0, groups, rows).astype(np.int32),
            "nll": tokens * rng.gamma(4, 0.6, rows),
            "tokens": tokens,
            "bytes": tokens * rng.integers(3, 6, rows),
        }
    )


def paired_rows(rows: int, groups: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed + 2)
    items = rows // 2
    difficulty = rng.beta(2, 2, items)
    task = rng.integers(0, groups, items).astype(np.int32)
    frames = []
    for name, power in (("a", 1.0), ("b", 1.4)):
        p = np.clip(difficulty + rng.normal(0, 0.1, items), 0.01, 0.99)
        frames.append(
            pl.DataFrame(
                {
                    "g": task,
                    "model": name,
                    "item": np.arange(items),
                    "confidence": p,
                    "correct": rng.random(items) < p**power,
                }
            )
        )
    return pl.concat(frames)


def numpy_group_loop(df: pl.DataFrame, replicates: int, seed: int) -> np.ndarray:
    """Per-group loop, replicates vectorised: 12 metrics' percentile intervals."""
    rng = np.random.default_rng(seed)
    g = df["g"].to_numpy()
    p_all = df["confidence"].to_numpy()
    y_all = df["correct"].to_numpy().astype(np.float64)
    order = np.argsort(g, kind="stable")
    bounds = np.flatnonzero(np.diff(g[order])) + 1
    out = []
    m = 10
    for rows in np.split(order, bounds):
        p, y = p_all[rows], y_all[rows]
        n = p.size
        idx = rng.integers(0, n, (replicates, n))
        pb, yb = p[idx], y[idx]
        b = np.minimum((pb * m).astype(np.int64), m - 1) + m * np.arange(replicates)[:, None]

        def binsum(v: np.ndarray, b: np.ndarray = b) -> np.ndarray:
            return np.bincount(b.ravel(), weights=v.ravel(), minlength=replicates * m).reshape(
                replicates, m
            )

        w = binsum(np.ones_like(pb))
        sp, sy = binsum(pb), binsum(yb)
        spp, spy = binsum(pb * pb), binsum(pb * yb)
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.where(w > 0, (sp - sy) / w, 0.0)
            acc_b = np.where(w > 0, sy / w, 0.0)
        acc = yb.mean(axis=1)
        ece = (w * np.abs(gap)).sum(axis=1) / n
        rel = (w * gap**2).sum(axis=1) / n
        mce = np.abs(gap).max(axis=1)
        brier = ((pb - yb) ** 2).mean(axis=1)
        res = (w * (acc_b - acc[:, None]) ** 2).sum(axis=1) / n
        unc = acc * (1 - acc)
        with np.errstate(divide="ignore", invalid="ignore"):
            var = np.where(w > 0, spp - sp**2 / w, 0.0).sum(axis=1) / n
            cov = -2 * np.where(w > 0, spy - sp * sy / w, 0.0).sum(axis=1) / n
        conf = pb.mean(axis=1)
        stats = np.stack([acc, conf, conf - acc, ece, np.sqrt(rel), mce, brier, rel, res, unc,
                          var, cov], axis=1)  # fmt: skip
        out.append(np.percentile(stats, [2.5, 97.5], axis=0))
    return np.array(out)


def scipy_one_group(p: np.ndarray, y: np.ndarray, replicates: int, seed: int) -> Any:
    """``scipy.stats.bootstrap`` of one group's ECE (paired, vectorised, percentile)."""
    from scipy.stats import bootstrap

    def ece(p: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        p, y = np.moveaxis(p, axis, -1), np.moveaxis(y, axis, -1)
        b = np.minimum((p * 10).astype(np.int64), 9)
        gaps = sum(np.abs(((p - y) * (b == k)).sum(axis=-1)) for k in range(10))
        return np.asarray(gaps / p.shape[-1])

    return bootstrap((p, y), ece, paired=True, vectorized=True, n_resamples=replicates,
                     method="percentile", rng=np.random.default_rng(seed))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# peers: calibration (source: the predictions; extra: bin statistics, paired rows, options)


def by_g(frame: pl.DataFrame, names: tuple[str, ...]) -> Result:
    """The named columns of a per-group frame, sorted by ``g``; ``count`` compared exactly."""
    frame = frame.sort("g")
    return Result({n: frame[n].cast(pl.Float64).to_numpy() for n in names}, exact=("count",))


def interval_columns(frame: pl.DataFrame) -> dict[str, np.ndarray]:
    frame = frame.sort("g")
    return {n: frame[n].to_numpy() for n in frame.columns if n.endswith(("_ci_low", "_ci_high"))}


CALIBRATION = Registry()
PERPLEXITY = Registry()


@CALIBRATION.peer(
    "plain_metrics",
    role="subject",
    what='cf.calibration_metrics(df, by="g")',
    normalise=lambda out, src: by_g(out, ("count", "ece")),
)
def run_plain(src: Source) -> pl.DataFrame:
    return cf.calibration_metrics(src.table(), by="g")


@CALIBRATION.peer("cf_intervals", what='calibration_intervals(df, by="g")')
def run_intervals(src: Source) -> pl.DataFrame:
    return calibration_intervals(src.table(), by="g", replicates=src.extra["replicates"])


@CALIBRATION.peer("cf_from_stats", what="intervals_from_bin_statistics(stats)")
def run_from_stats(src: Source) -> pl.DataFrame:
    return intervals_from_bin_statistics(src.extra["stats"], replicates=src.extra["replicates"])


@CALIBRATION.peer("cf_row_bootstrap", what='calibration_intervals(..., resample="rows")')
def run_row_bootstrap(src: Source) -> pl.DataFrame:
    return calibration_intervals(
        src.table(), by="g", replicates=src.extra["replicates"], resample="rows"
    )


@CALIBRATION.peer("numpy_group_loop", what="a loop over groups, replicates vectorised")
def run_numpy_loop(src: Source) -> np.ndarray:
    return numpy_group_loop(src.table(), src.extra["replicates"], src.extra["seed"])


@CALIBRATION.peer(
    "scipy_bootstrap",
    what="scipy.stats.bootstrap of one group's ECE (reported x the number of groups)",
    needs="scipy",
)
def run_scipy(src: Source) -> Any:
    p, y = src.extra["group0"]
    return scipy_one_group(p, y, src.extra["replicates"], src.extra["seed"])


@CALIBRATION.peer(
    "cf_noise_floor",
    what='calibration_noise_floor(df, by="g")',
    normalise=lambda out, src: by_g(out, ("count", "ece")),
)
def run_noise_floor(src: Source) -> pl.DataFrame:
    return calibration_noise_floor(src.table(), by="g")


@CALIBRATION.peer("cf_paired", what='paired_comparison(pairs, by="g")')
def run_paired(src: Source) -> pl.DataFrame:
    return paired_comparison(src.extra["pairs"], by="g", replicates=src.extra["replicates"])


@PERPLEXITY.peer(
    "plain_perplexity",
    role="subject",
    what='cf.perplexity(docs, tokens="tokens", bytes="bytes", by="g")',
    normalise=lambda out, src: by_g(out, ("count", "perplexity")),
)
def run_plain_perplexity(src: Source) -> pl.DataFrame:
    return cf.perplexity(src.table(), tokens="tokens", bytes="bytes", by="g")


@PERPLEXITY.peer("cf_ppl_intervals", what="perplexity_intervals(docs, ...)")
def run_ppl_intervals(src: Source) -> pl.DataFrame:
    return perplexity_intervals(
        src.table(), tokens="tokens", bytes="bytes", by="g", replicates=src.extra["replicates"]
    )


def interval_checks(outputs: dict[str, Any], src: Source, docs: Source) -> list[str]:
    """The untimed checks of the interval outputs; returns the failures (printed)."""
    problems = []
    ours = interval_columns(outputs["cf_intervals"])
    same = harness.compare(Result(ours), Result(interval_columns(outputs["cf_from_stats"])))
    print(f"- cf_from_stats vs cf_intervals: max |diff| {max(same['diffs'].values()):.1e}")
    if not same["ok"]:
        problems.append("cf_from_stats: intervals differ from cf_intervals")
    if "numpy_group_loop" in outputs:
        theirs = numpy_group_loop(src.table(), src.extra["replicates"], src.extra["seed"] + 1)
        width = theirs[:, 1, 4] - theirs[:, 0, 4]  # RMSCE: the ECE's interval is a test's
        drift = float(np.median(np.abs(ours["rmsce_ci_low"] - theirs[:, 0, 4]) / width))
        print(f"- RMSCE lower bound, bins vs numpy loop: median |diff| / width = {drift:.3f}")
        if not drift < DRIFT_LIMIT:
            problems.append(f"numpy_group_loop: drift {drift:.3f} >= {DRIFT_LIMIT}")
    point = docs.extra["point"].sort("g")["perplexity"].to_numpy()
    ppl = interval_columns(outputs["cf_ppl_intervals"])
    inside = (ppl["perplexity_ci_low"] <= point) & (point <= ppl["perplexity_ci_high"])
    print(f"- point perplexity inside its interval: {int(inside.sum())} of {inside.size} groups")
    if not inside.all():
        problems.append("cf_ppl_intervals: a point perplexity outside its interval")
    for message in problems:
        print(f"!! MISMATCH {message}")
    return problems


def keep_outputs(peers: list[Peer], outputs: dict[str, Any]) -> list[Peer]:
    """The peers, each keeping its first output in ``outputs`` (for the untimed checks)."""

    def keeping(peer: Peer) -> Peer:
        def run(src: Source) -> Any:
            out = peer.run(src)
            outputs.setdefault(peer.name, out)
            return out

        return replace(peer, run=run)

    return [keeping(p) for p in peers]


def print_cpu(cpu: dict[str, float], ppl_cpu: dict[str, float]) -> None:
    """The CPU seconds of the timed runs and their ratios (the steadier ones under load)."""
    print("\nCPU seconds of the same runs (all threads)\n")
    body = []
    for table, base in ((cpu, "plain_metrics"), (ppl_cpu, "plain_perplexity")):
        for name, seconds in table.items():
            body.append([name, f"{seconds:.3f}", f"{seconds / table[base]:.1f}"])
    print(report.markdown(["method", "cpu s", "cpu ratio"], body))


def sources(rows: int, groups: int, reps: int, args: argparse.Namespace) -> tuple[Source, Source]:
    """The predictions (with the bin statistics, paired rows, group 0's arrays) and the
    documents (with their point perplexity), built before timing."""
    spec = Spec(rows, groups, 1)
    df = predictions(rows, groups, args.seed)
    docs = documents(rows, groups, args.seed)
    part = df.filter(pl.col("g") == 0)
    src = frame_source(
        df,
        spec,
        stats=cf.bin_statistics(df, by="g"),
        pairs=None if args.no_peers else paired_rows(rows, groups, args.seed),
        group0=(part["confidence"].to_numpy(), part["correct"].to_numpy().astype(np.float64)),
        replicates=reps,
        seed=args.seed,
    )
    point = cf.perplexity(docs, tokens="tokens", bytes="bytes", by="g")
    doc_src = frame_source(docs, spec, replicates=reps, point=point)
    return src, doc_src


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=float, default=1e5)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--row-bootstrap", action="store_true", help="also time resample='rows'")
    parser.add_argument(
        "--no-peers", action="store_true", help="skip the numpy loop, scipy and paired runs"
    )
    parser.add_argument("--quick", action="store_true", help="2e4 rows, 20 groups: seconds")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.groups, args.replicates, args.repeats = 2e4, 20, 50, 1
        args.row_bootstrap = True
    rows, groups, reps, repeats = int(args.rows), args.groups, args.replicates, args.repeats
    env = harness.environment()
    report.print_header("Uncertainty: bootstrap intervals, noise floor, paired tests", env)
    print(f"\nrows={rows:,} groups={groups} replicates={reps} (best of {repeats})")
    src, doc_src = sources(rows, groups, reps, args)

    names = ["cf_intervals", "cf_from_stats", "cf_noise_floor"]
    if args.row_bootstrap:
        names.append("cf_row_bootstrap")
    if not args.no_peers:
        names += ["numpy_group_loop", "scipy_bootstrap", "cf_paired"]
    once = ("cf_row_bootstrap", "numpy_group_loop", "scipy_bootstrap", "cf_paired")
    outputs: dict[str, Any] = {}
    peers = keep_outputs(CALIBRATION.select(names), outputs)
    cpu: dict[str, float] = {}  # the expensive methods run once, the others best of repeats
    best, checks, errors = harness.time_interleaved(src, peers, repeats, cpu=cpu, once=once)
    if "scipy_bootstrap" in best:  # one group timed: scaled to all of them
        scaled = f"scipy_bootstrap_x{groups}"
        best[scaled] = best.pop("scipy_bootstrap") * groups
        cpu[scaled] = cpu.pop("scipy_bootstrap") * groups
    ppl_cpu: dict[str, float] = {}
    ppl_best, ppl_checks, ppl_errors = harness.time_interleaved(
        doc_src, keep_outputs(PERPLEXITY.select(["cf_ppl_intervals"]), outputs), repeats,
        cpu=ppl_cpu,
    )  # fmt: skip

    title = f"{rows:.0e} rows x {groups} groups, {reps} replicates"
    report.print_table(title, best, checks, errors, reference="plain_metrics",
                       highlight=("count", "ece"))  # fmt: skip
    report.print_table(f"perplexity, {title}", ppl_best, ppl_checks, ppl_errors,
                       reference="plain_perplexity", highlight=("count", "perplexity"))  # fmt: skip
    print_cpu(cpu, ppl_cpu)
    print("\nInterval cross-checks (not timed):\n")
    problems = interval_checks(outputs, src, doc_src) if not errors else ["a method failed"]
    failed = (
        report.failures(checks, errors) + report.failures(ppl_checks, ppl_errors) + len(problems)
    )
    runs = [
        {"rows": rows, "groups": groups, "source": "memory", "repeats": repeats,
         "seconds": best, "cpu_seconds": cpu, "checks": checks, "errors": errors},
        {"rows": rows, "groups": groups, "source": "perplexity", "repeats": repeats,
         "seconds": ppl_best, "cpu_seconds": ppl_cpu, "checks": ppl_checks,
         "errors": ppl_errors},
    ]  # fmt: skip
    report.save_json(args.json, environment=env, runs=runs, interval_problems=problems)
    print("\ncross-check ok" if not failed else f"\n{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
