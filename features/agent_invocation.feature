@agent-runtime
Feature: Invoking an agent through the Router

  An agent runtime is reached through the Router. A call that carries no session id opens
  a session: the Router has the WorkloadManager start a sandbox for it, forwards the call
  there, and returns the new session id with the answer. A call that carries that session
  id is forwarded to the same sandbox, so an agent can keep state from one call to the
  next.

  @smoke
  Scenario: The first call opens a session and the next call in it reaches the same sandbox
    When I send "hello" to the echo agent without a session
    Then the agent echoes "hello"
    And the answer carries a new session id
    When I send "hello again" to the echo agent in that session
    Then the agent echoes "hello again"
    And the answer carries the same session id
    And both calls were served by the same sandbox, one after the other
