@code-interpreter
Feature: Running code in a code interpreter

  A code interpreter runs commands in a sandbox through PicoD, reached through the Router.
  As with agents, a call without a session id opens a session. Each command answers with
  its output, its errors and its exit code. A warm-pool interpreter hands out a sandbox it
  started in advance; the caller sees no difference.

  Files in a session's workspace carry over from one command to the next. Whether
  variables carry over as well depends on the interpreter: upstream AgentCube runs every
  command in a fresh process (stateless); a stateful interpreter keeps them. The suite
  checks the behaviour that interpreter_mode names and reports the other as skipped.

  @smoke
  Scenario Outline: The first command runs in a new session of the <interpreter>
    When I run the Python code "print(1+1)" in the <interpreter> without a session
    Then the command prints "2"
    And the command exits with code 0
    And the answer carries a new session id

    Examples:
      | interpreter           |
      | python interpreter    |
      | warm-pool interpreter |

  @use.with_interpreter_mode=stateful
  Scenario: A variable defined by one command is still defined in the next
    Given a session of the python interpreter
    And the session has run the Python code "x = 10"
    When I run the Python code "print(x)" in the session
    Then the command prints "10"
    And the answer carries the same session id

  @use.with_interpreter_mode=stateless
  Scenario: A variable defined by one command is undefined in the next
    Given a session of the python interpreter
    And the session has run the Python code "x = 10"
    When I run the Python code "print(x)" in the session
    Then the command fails because "x" is not defined
    And the answer carries the same session id

  Scenario: A file written by one command can be read by the next
    Given a session of the python interpreter
    And the session has run the Python code "open('x.txt', 'w').write('10')"
    When I run the Python code "print(open('x.txt').read())" in the session
    Then the command prints "10"
