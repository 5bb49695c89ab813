"""The step library of the AgentCube acceptance suite.

Steps in ``steps/`` state intent in one line and call into this package, which holds the
HTTP clients, the configuration table, polling, matchers, platform adapters and evidence.
"""
