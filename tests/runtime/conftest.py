"""Registers the `slow` marker for the runtime tests (`pytest -m "not slow"` leaves them out)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a variant that costs tens of seconds (compiled multi-process runs)")
