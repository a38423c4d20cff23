"""Judging measurements: the gate's rule, trends, baselines, fits, the fabric sweep's outliers,
the seeds' claims, and the parsers of kernel and OSU output.

Reads samples from :mod:`commcheck.results`; imports neither ReFrame nor the site layer.
"""
