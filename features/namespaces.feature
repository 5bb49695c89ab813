@agent-runtime @security
Feature: Namespaces keep their runtimes to themselves

  A namespace is a tenant's space: the Router finds a runtime only in the namespace the call
  names, so one team's agent is never served under another team's namespace. A session
  belongs to the sandbox it was opened with: presented under another namespace, it may be
  refused, or still be served by that same sandbox, but never by the other namespace's
  runtime of the same name, and it never turns into a new session there.

  @id.not-in-namespace
  Scenario: A runtime is not found under a namespace it is not in
    When I call the echo agent under a namespace it is not in
    Then the call is refused because the runtime was not found

  @requires.runtime-admin @requires.neighbour-namespace @id.other-namespace-session
  Scenario: A session presented under another namespace is never served by that namespace's runtime
    Given a session of the echo agent
    And an echo agent of the same name in another namespace
    When I send "whose agent are you?" to the echo agent of the other namespace in that session
    Then the call is served by the session's own sandbox or refused, never by the other one
