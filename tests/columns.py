"""Output column names the tests pin (spelled out here, not imported from the package)."""

METRICS = (
    "accuracy",
    "mean_confidence",
    "overconfidence",
    "ece",
    "rmsce",
    "mce",
    "mce_guarded",
    "brier",
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
    "log_loss",
)
DECOMPOSITION = (
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
)
SUM_COLUMNS = (
    "weight",
    "weight_correct",
    "weight_wrong",
    "sum_confidence_correct",
    "sum_residual_correct",
    "sum_residual_wrong",
    "sum_sq_residual_correct",
    "sum_sq_residual_wrong",
    "sum_log_loss",
)
