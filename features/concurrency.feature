@reliability
Feature: Many calls at once

  The Router serves many sessions at the same moment, each kept apart from the others,
  and ends them all when they are closed; they are asked for no more at once than the
  concurrency limit the Router declares. Past that limit it refuses further calls at once
  as overloaded, and serves the calls within the limit.

  @code-interpreter @slow @serial @requires.sandbox-observation @id.many-sessions-at-once
  Scenario: 20 sessions opened at once within the concurrency limit are each served apart, and all end when closed
    When 20 callers each open a session of the python interpreter, as many at the same moment as the concurrency limit allows, writing a file of their own
    Then every caller got a session of its own
    And each session's workspace holds its caller's file and no other caller's
    When all those sessions are closed
    Then no sandbox of theirs is left

  @agent-runtime @serial @requires.overload @fixture.limited-router @id.overload-refused
  Scenario: Calls beyond the concurrency limit are refused as overloaded, calls within it are served
    Given a session of the echo agent on a Router whose concurrency limit is known
    When as many slow calls as the limit, and 2 more, arrive in the session at the same moment
    Then as many calls as the limit are served
    And the 2 others are refused at once because the Router is overloaded
    And once the slow calls are done, the session is served again
