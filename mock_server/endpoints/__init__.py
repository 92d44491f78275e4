"""The TITO endpoints besides generate (`mock_server.stages`): abort, dev mode, pause, metrics."""
