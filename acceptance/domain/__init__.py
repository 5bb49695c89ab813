"""The step library: the scenario's World, one helper per capability of the platform, and
the step parameter types. The rule the steps follow (tests/suite/test_step_rule.py): When
steps act; Then steps call an `expect_*` (of a helper, or the World's expect_last_answer),
which names the expectation and shows what came back; a When step calls none.
"""
