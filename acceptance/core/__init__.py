"""The vocabulary every wing shares: the settings table, runtimes, the HTTP transport and
clients, evidence, matchers, polling and measurements."""
