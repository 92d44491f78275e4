"""`tito-conformance diff`: send one corpus to two servers and report structural differences.

The comparison itself is `conformance.diff.structure`; this package holds its parts, the corpus of
requests and the command that sends it.
"""
