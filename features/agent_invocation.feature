@agent-runtime
Feature: Invoking an agent through the Router

  An agent runtime is reached through the Router. A call that carries no session id opens
  a session: the Router has the WorkloadManager start a sandbox for it, forwards the call
  there, and returns the new session id with the answer. A call that carries that session
  id is forwarded to the same sandbox, so an agent can keep state from one call to the
  next.

  @smoke @id.first-call
  Scenario: The first call opens a session and the next call in it reaches the same sandbox
    When I send "hello" to the echo agent without a session
    Then the agent echoes "hello"
    And the answer carries a new session id
    When I send "hello again" to the echo agent in that session
    Then the agent echoes "hello again"
    And the answer carries the same session id
    And both calls were served by the same sandbox, one after the other

  @id.echo-unchanged
  Scenario Outline: The agent is given <a text> and echoes it back unchanged
    When I send <a text> to the echo agent without a session
    Then the agent echoes that text back unchanged

    Examples:
      | a text                                                               |
      | an empty text                                                        |
      | a text full of quotes, backslashes, newlines and non-ASCII characters |
