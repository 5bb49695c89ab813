"""The acceptance suite's support package: what the steps in ``steps/`` call.

Four wings, from the bottom up; a module imports only from its own wing or a lower one:

- ``core``: the vocabulary every wing shares (settings, runtimes, HTTP, matchers, polling);
- ``platforms``: what the suite can do beside HTTP, one module per platform, and the one
  place that resolves the run's Target;
- ``domain``: the step library: the scenario's World and one helper per capability;
- ``run``: the run itself: start and stop, tags, results, summaries and reports.
"""
