"""The lighteval scripts run only in their subprocess: ``lighteval_runs.py`` stands an empty
module in for one of lighteval's task modules when imported, and ``lighteval_tasks.py``
reads its data folder from the environment that the test sets."""

collect_ignore = ["lighteval_runs.py", "lighteval_tasks.py"]
