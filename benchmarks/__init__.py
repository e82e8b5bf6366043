"""The calib_frames benchmarks: a small package shared by the ``bench_<area>.py`` scripts.

* :mod:`benchmarks.workload` - synthetic data specs, their generation and the parquet cache;
* :mod:`benchmarks.peers` - the common :class:`~benchmarks.peers.Result`, :class:`Peer` and
  :class:`Registry`, and the registry of the grouped-metrics peers (``METRICS``);
* :mod:`benchmarks.harness` - interleaved best-of-N timing, the cross-check, peak RSS of a
  fresh subprocess, the environment;
* :mod:`benchmarks.report` - markdown tables of ratios, peak memory, JSON output.

Each ``bench_<area>.py`` runs as ``python benchmarks/bench_<area>.py`` or ``python -m
benchmarks.bench_<area>`` from the repository root; see benchmarks/README.md for how a new
benchmark plugs in, and BENCHMARKS.md for the commands, targets and measured figures.
"""
