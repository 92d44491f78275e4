"""Verdicts: the results model, whose failure it is, what a vendor may claim, and the report
assembled from a run's outcomes."""
