"""vLLM's own API server on CPU over a simulated engine core (issue 29).

`serve.py` and `simcore.py` run inside a release's environment, by path, and import vLLM;
the rest of this package runs in the kit and never imports them.
"""
