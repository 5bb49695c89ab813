"""`python -m onemachine e2e`: upstream AgentCube's own e2e (test/e2e/run_e2e.sh's plan) on
the one-machine cluster, from a maintainer's checkout and builds, without Kind, Docker or
images. docs/upstream-e2e.md says what runs and what does not."""
