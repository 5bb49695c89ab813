@agent-runtime @ttl @slow
@requires.runtime-admin @requires.sandbox-observation
Feature: Hard session lifetime

  Calls keep a session from idling out, but not forever: every session also has a hard
  lifetime: its runtime's maximum session duration, or the shorter lifetime asked for when
  the session was opened (on current releases). When it is up, the WorkloadManager ends the
  session however busy it is, and from then on the Router refuses it as not found.

  These scenarios use a copy of the echo agent with a short idle timeout, give the session a
  lifetime of a few seconds, and call it continuously until it ends, allowing the garbage
  collector a grace period.

  @id.busy-session-lifetime
  Scenario: A busy session ends when its runtime's maximum session duration is up
    Given an echo agent with a short maximum session duration
    And a session of the echo agent with a short maximum session duration
    When the session is called continuously until it is no longer served
    Then the session lasted its hard lifetime
    And the call is refused because the session was not found
    And the sandbox that served the session is gone

  @not.with_agentcube_release=pre-460 @requires.workload-manager-sessions @id.busy-session-ttl
  Scenario: A busy session ends when the lifetime it asked for is up
    Given an echo agent with a short idle timeout
    And a session of the echo agent with a short idle timeout that asks for a short lifetime
    When the session is called continuously until it is no longer served
    Then the session lasted its hard lifetime
    And the call is refused because the session was not found
    And the sandbox that served the session is gone
