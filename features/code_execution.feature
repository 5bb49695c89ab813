@code-interpreter
Feature: Running code in a code interpreter

  A code interpreter runs commands in a sandbox through PicoD, reached through the Router.
  As with agents, a call without a session id opens a session. Each command answers with
  its output, its errors and its exit code. A warm-pool interpreter hands out a sandbox it
  started in advance; the caller sees no difference.

  Files in a session's workspace carry over from one command to the next. Variables do
  not: upstream AgentCube runs every command in a fresh process. A stateful interpreter
  keeps them instead, in one Jupyter kernel per session that runs code sent to it (an
  extension of localcube's, which upstream has yet to offer): when that kernel dies, the
  session ends as if its sandbox had crashed. Targets without a stateful interpreter
  report its scenarios skipped.

  @smoke @id.first-command
  Scenario Outline: The first command runs in a new session of the <interpreter>
    When I run code that prints the sum of 1 and 1 in the <interpreter> without a session
    Then the command prints "2"
    And the command exits with code 0
    And the command wrote nothing to its error output
    And the answer carries a new session id

    Examples:
      | interpreter           |
      | python interpreter    |
      | warm-pool interpreter |

  @id.exit-codes
  Scenario Outline: A command that exits with code <code> is answered with that code
    When I run a command that exits with code <code> in the warm-pool interpreter without a session
    Then the command exits with code <code>

    Examples:
      | code |
      | 1    |
      | 3    |
      | 7    |
      | 42   |

  @id.stateless
  Scenario: A variable defined by one command is undefined in the next
    Given a session of the python interpreter
    And the session has set the variable "x" to 10
    When I print the variable "x" in the session
    Then the command fails because "x" is not defined
    And the answer carries the same session id

  @requires.stateful-interpreter @id.stateful
  Scenario: In a stateful interpreter, a variable defined by one run of code is still defined in the next
    Given a session of the stateful interpreter
    And the session has set the variable "x" to 10
    When I print the variable "x" in the session
    Then the command prints "10"
    And the answer carries the same session id

  @requires.stateful-interpreter @id.kernel-dies
  Scenario: When a stateful interpreter's kernel dies, its session ends as if its sandbox had crashed
    Given a session of the stateful interpreter
    And the session has set the variable "x" to 10
    When code run in the session stops its own kernel
    Then the run fails because the session's kernel died
    When I call the session again
    Then the call fails fast, with an error saying the sandbox is gone

  @id.file-carries-over
  Scenario: A file written by one command can be read by the next
    Given a session of the python interpreter
    And the session has written "10" to the file "x.txt"
    When I print the file "x.txt" in the session
    Then the command prints "10"
