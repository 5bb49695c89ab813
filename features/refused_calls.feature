@smoke
Feature: Refusing calls the Router cannot route

  The Router refuses a call it cannot route with "not found" and an error that names what
  it could not find: a runtime that does not exist, or a session it does not know, because
  it never issued it or because the session has ended. It never answers such a call by
  opening a new session.

  @id.missing-runtime
  Scenario Outline: A call to <a runtime> that does not exist is refused
    When I call <a runtime> that does not exist
    Then the call is refused because the runtime was not found

    @agent-runtime
    Examples: Agent runtimes
      | a runtime        |
      | an agent runtime |

    @code-interpreter
    Examples: Code interpreters
      | a runtime          |
      | a code interpreter |

  @id.never-issued
  Scenario Outline: A call to the <runtime> with a session id it never issued is refused
    When I call the <runtime> with a session id that was never issued
    Then the call is refused because the session was not found

    @agent-runtime
    Examples: Agent runtimes
      | runtime    |
      | echo agent |

    @code-interpreter
    Examples: Code interpreters
      | runtime            |
      | python interpreter |
