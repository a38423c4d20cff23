"""Robust spread: the median absolute deviation (MAD), and the MAD scaled to estimate the
standard deviation of normally distributed data (the gate, baselines, trends, fabric sweeps)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

#: MAD to the standard deviation of a normal distribution: 1 / Phi^-1(3/4).
MAD_TO_SIGMA = 1.4826


def mad(values: Sequence[float], center: float | None = None) -> float:
    """The median absolute deviation from ``center`` (default: the median)."""
    med = statistics.median(values) if center is None else center
    return statistics.median(abs(v - med) for v in values)


def sigma(values: Sequence[float], center: float | None = None) -> float:
    """The MAD scaled to estimate a standard deviation (MAD_TO_SIGMA x MAD)."""
    return MAD_TO_SIGMA * mad(values, center)
