"""Estimators that are not additive: each works per group on the rows of that group, in memory."""
