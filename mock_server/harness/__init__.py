"""The mock in other people's tests: one mock, a fleet, in-process clients, respx."""
