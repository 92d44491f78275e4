"""The TITO endpoints: generate, abort, dev mode, pause, metrics."""
