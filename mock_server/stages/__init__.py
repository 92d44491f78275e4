"""POST /inference/v1/generate as its stages, one module each, composed by `route`.

gate (routes, the engine's health, injected errors) -> parse (media type, JSON, the body) ->
validate (the rule table) -> admit (pause, the vocabulary, request ids, max_tokens, hang-ups)
-> generate (the engine run) -> build (the answer) -> frame (a stream's events) -> write (the
bytes). The gate answers before the body is read, as vLLM's route does. Each stage reads its
behaviour from its slot of `config.policies` (`mock_server.behaviour.slots`), never a defect's
name; a stage that ends the request early raises what `route` answers (`refusals`).
"""
