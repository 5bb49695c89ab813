@reliability @disruptive @serial
Feature: Surviving disruptions

  Sessions outlive a restart of the Router: their records live in the store, and their
  sandboxes keep running. When a session's sandbox dies, the next call in the session
  fails at once with an error rather than hanging, and new sessions are unaffected.

  These scenarios disturb the target for everything else, so the default run leaves them
  out: include them with --tags=@disruptive.

  @requires.router-restart @id.router-restart
  Scenario: Sessions opened before a Router restart keep working after it
    Given a session of the echo agent that has answered a call
    And a session of the python interpreter that holds "kept.txt"
    When the Router restarts
    Then the session of the echo agent is still served by the same sandbox
    And the session of the python interpreter still holds "kept.txt"

  @code-interpreter @requires.sandbox-observation @requires.sandbox-kill @id.sandbox-dies
  Scenario: When a session's sandbox dies, the next call fails fast and a new session works
    Given a session of the python interpreter
    When the sandbox serving the session is killed and the platform shows it gone
    And I call the session again
    Then the call fails fast, with an error saying the sandbox is gone
    When I run code that prints the sum of 1 and 1 in the python interpreter without a session
    Then the command prints "2"
