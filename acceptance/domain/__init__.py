"""The step library: the scenario's World, one helper per capability of the platform
(lifetimes, long tasks, warm pools, the jail, isolation, credentials, resilience, refusals),
and the step parameter types.

The rule the steps follow (tests/suite/test_step_rule.py holds them to it): When steps act,
Then steps call an `expect_*`. Every assertion of a Then step lives in an `expect_*` method
of a helper, which names the expectation and shows what came back; a When step calls none.
"""
