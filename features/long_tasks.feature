@long-task
Feature: Long tasks

  A call may run much longer than an ordinary one. The Router waits for a command as long
  as the command's own timeout allows; a command that outlives its timeout is stopped, with
  the exit code and the message that say it timed out, and its session goes on serving. Time spent inside
  a call counts as activity: the Router records it before and after the call, so a task
  longer than the runtime's idle timeout does not end its session.

  @code-interpreter @slow @id.long-command
  Scenario: A command that runs longer than an ordinary call completes with its full output
    Given a session of the python interpreter
    When I run a long command in the session, within its own timeout
    Then the long command completes with every line it printed

  @code-interpreter @id.background-process-timeout
  Scenario: A command that leaves a background process running is still stopped at its timeout
    Given a session of the python interpreter
    When I run a command in the session that leaves a background process running long past its timeout of 1 second
    Then the command is stopped because it timed out after 1 second
    And the answer came at the timeout, without waiting for the background process

  @code-interpreter @id.command-timeout
  Scenario: A command that outlives its timeout is stopped, and the session runs the next one
    Given a session of the python interpreter
    When I run a command that sleeps for 3 seconds in the session with a timeout of 1 second
    Then the command is stopped because it timed out after 1 second
    When I run a command that prints "still here" in the session
    Then the command prints "still here"
    And the answer carries the same session id

  @agent-runtime @ttl @slow @requires.runtime-admin @id.long-task
  Scenario: A task longer than the idle timeout keeps its session alive
    Given an echo agent with a short idle timeout
    And a session of the echo agent with a short idle timeout
    When the agent works on one call for longer than its idle timeout
    Then the long call completes
    And the session still answers, from the same sandbox
