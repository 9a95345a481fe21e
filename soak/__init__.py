"""The soak test of the main command: ./scripts/run for minutes, engines killed in it."""
