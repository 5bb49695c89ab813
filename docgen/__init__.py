"""The generators of the documents in docs/, outside the suite: the suite never imports them
(tests/test_layout.py), and each prints its document or table, which a test keeps equal to
the file.

    python -m docgen.scenario_index > docs/scenarios.md      the scenarios by capability
    python -m docgen.coverage > docs/coverage.md             upstream's checks against ours
    python -m docgen.configuration_table                     docs/configuration.md's settings
    python -m docgen.tag_table                               docs/configuration.md's tags

coverage.yaml is the coverage map: what each scenario proves, and what upstream's e2e tests
and the umbrella issue's items check.
"""
