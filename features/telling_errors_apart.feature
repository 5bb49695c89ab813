@errors
Feature: Telling errors apart

  A client must be able to tell why a call failed. A session that is unknown, closed or
  expired is refused by the Router with "not found", naming the session and, on current
  releases, carrying a code that says so. A "not found" from the application inside the
  sandbox is passed on as the application sent it: in the session, and never with that
  code. A request a code interpreter cannot accept is refused with an error that explains
  it.

  @agent-runtime @id.closed-session
  Scenario: A call in a session that has been closed is refused because the session was not found
    Given a session of the echo agent
    And the session has been closed
    When I send "hello" to the echo agent in that session
    Then the call is refused because the session was not found

  @agent-runtime @id.agent-not-found
  Scenario: The agent's own "not found" is passed on, not mistaken for an unknown session
    Given a session of the echo agent
    When I ask the echo agent in the session for a path it does not serve
    Then the agent's own "not found" comes back in the session, without the session error code

  @code-interpreter @id.interpreter-refusals
  Scenario Outline: A code interpreter refuses <a request>, saying why
    Given a session of the python interpreter
    When I send the session <a request>
    Then the call is refused with an error that says why

    Examples:
      | a request                                                   |
      | a command request that is not valid JSON                    |
      | an empty command                                            |
      | a timeout that is not a duration                            |
      | an upload whose content is not encoded as the API requires  |
      | a listing without a path                                    |
      | a download of a file that does not exist                    |
      | a listing of a directory that does not exist                |
      | a download of a directory                                   |
      | an upload larger than the sandbox accepts                   |
