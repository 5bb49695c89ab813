"""The step library: the scenario's World, one helper per capability of the platform
(lifetimes, long tasks, warm pools, the jail, isolation, credentials, resilience, refusals),
and the step parameter types."""
