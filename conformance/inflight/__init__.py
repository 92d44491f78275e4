"""Acting on a request while it provably runs: plans, the acting routine, what an attempt saw,
and the one proof obligation of every in-flight verdict."""
