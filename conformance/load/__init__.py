"""The suite under load (issue 37): many rollout-shaped requests at once, every answer judged.

`tito-conformance load` drives a server the way RL rollout workers do (streams and bodies, n up
to 8, logprobs, seeds, stop ids, aborts on both paths, hang-ups, DP-rank pins, pause -> new
label -> resume cycles with the aborted requests resubmitted) and judges every answer by the
suite's own rules under the suite's requirement IDs (`conformance.tito.rules`, `semantics`,
`openapi`; in-flight verdicts by `conformance.inflight.proof`). Users run on Locust: the same
master/worker path whether the workers are processes here (`--workers N`) or on other hosts
(`--master`, `--worker --master-host H`); each worker judges its own answers and the master
merges verdicts and figures.

Modules: `mix` (the workload file and the requests it draws), `tally` (verdicts and figures,
mergeable), `judge` (one finished request against the rules), `engines` (what the engines say
of a request while it runs) and `engine_rules` (the rules that read it), `rollout` (the Locust
user and the worker's state), `cycles` (the master's pause and label changes), `swarm` (master and
workers on Locust), `outcome` (the JSON report, its schema, the run's Report for JUnit and the
exit code), `plots` (the HTML page), `cli`. Nothing here is imported at the package's import:
`python -m conformance.load` must import Locust (gevent's monkey-patching) before httpx.
"""
