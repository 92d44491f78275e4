"""One run of the suite: the pytest side, modules side by side, the embedded mock."""
