@agent-runtime @ttl @slow @requires.short-timeout-agent
Feature: Ending idle sessions

  A runtime's sessionTimeout bounds how long a session may stay idle. Every call through
  the Router counts as activity and keeps the session alive. Once a session has been idle
  for longer than its timeout, the WorkloadManager's garbage collector ends its sandbox and
  the Router refuses the session as not found; it does not open a new one in its place.

  The scenarios use an echo agent whose idle timeout is a few seconds long, and allow the
  garbage collector a grace period after it.

  Background:
    Given an echo agent with a short idle timeout
    And a session of the echo agent with a short idle timeout

  @id.kept-alive
  Scenario: Calls keep a session alive past its idle timeout
    When the session is called more often than its idle timeout, for twice that timeout
    Then every call is served in the session, by the same sandbox

  @id.idle-ends
  Scenario: A session left idle past its timeout ends
    When the session is left idle for longer than its idle timeout
    Then calls in the session are refused because the session was not found
    And the sandbox that served the session is gone
