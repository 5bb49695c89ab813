@agent-runtime @ttl @slow
@requires.runtime-admin @requires.sandbox-observation
Feature: Ending idle sessions

  A runtime's sessionTimeout bounds how long a session may stay idle. Every call through
  the Router counts as activity and keeps the session alive. Once a session has been idle
  for longer than its timeout, the WorkloadManager's garbage collector ends its sandbox and
  the Router refuses the session as not found; it does not open a new one in its place.

  These scenarios apply their own copy of the echo agent with a timeout of a few seconds
  (short_session_timeout) and allow ttl_grace for garbage collection, so they need a
  platform that can apply runtimes and observe sandboxes.

  Scenario: Calls keep a session alive, and a session left idle past its timeout ends
    Given an echo agent with a short idle timeout
    And a session of the echo agent with a short idle timeout
    Then the session stays alive while it is called more often than its idle timeout
    When the session is left idle for longer than its idle timeout
    Then calls in the session are refused because the session was not found
    And the sandbox that served the session is gone
