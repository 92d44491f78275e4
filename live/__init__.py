"""Run the conformance suite against a real `vllm serve` started with the documented flags."""
