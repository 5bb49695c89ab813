@agent-runtime @security @requires.auth
Feature: Credentials and authentication

  With authentication on, every call to the Router's API must present a valid access
  token of the Router's issuer, holding the role the Router requires, and a session belongs
  to the subject that opened it, though a subject with the admin role may use any session.
  A token is refused whatever is wrong with it: expired, for another audience, naming
  another issuer, or forged without the issuer's key; and no refusal repeats a credential.
  The caller's token stops at the Router: it signs its own request to the sandbox, so no
  sandbox ever sees a caller's credentials.

  Background:
    Given the Router requires a token

  @id.token-never-forwarded
  Scenario: The caller's token never reaches the sandbox
    Given a session of the echo agent
    When I send "hello" to the echo agent in that session
    Then the agent echoes "hello"
    And the sandbox received none of the callers' tokens

  @id.unauthorized
  Scenario Outline: A call <credentials> is refused as unauthorized
    When I call the echo agent <credentials>
    Then the call is refused as unauthorized because <reason>
    And the refusal repeats none of the credentials

    Examples: Without a usable token
      | credentials                           | reason                                         |
      | without a token                       | no authorization header came with it           |
      | with a malformed authorization header | its authorization header holds no bearer token |
      | with a token the target does not know | its token is not valid                         |

    @requires.expired-token
    Examples: Expired
      | credentials                   | reason                 |
      | with a token that has expired | its token is not valid |

    @requires.other-audience-token
    Examples: For another audience
      | credentials                              | reason                 |
      | with a token issued for another audience | its token is not valid |

    @requires.other-issuer-token
    Examples: Naming another issuer
      | credentials                            | reason                 |
      | with a token that names another issuer | its token is not valid |

    @requires.forged-tokens
    Examples: Forged without the issuer's private key
      | credentials                                                         | reason                 |
      | with a token signed by a key the issuer never published             | its token is not valid |
      | with a token that is not signed                                     | its token is not valid |
      | with a token signed with the issuer's public key as a shared secret | its token is not valid |

  @requires.no-role-subject @id.missing-role
  Scenario: A subject without the role the Router requires is forbidden
    When I call the echo agent as a subject without the role the Router requires
    Then the call is refused as forbidden for want of the required role
    And the refusal repeats none of the credentials

  @requires.second-subject @id.owner
  Scenario: A session belongs to the subject that opened it
    Given a session of the echo agent
    When another subject calls the echo agent in that session
    Then the call is refused because the session belongs to another subject
    And the session still serves the subject that opened it

  @requires.admin @id.admin
  Scenario: A subject with the admin role may use a session another subject opened
    Given a session of the echo agent
    When a subject with the admin role sends "checking in" to the echo agent in that session
    Then the agent echoes "checking in"
    And the answer carries the same session id
    And both calls were served by the same sandbox, one after the other
