@code-interpreter @security
Feature: The workspace jail

  Every file operation through the Router, and the working directory of every command,
  stays inside the session's workspace. A path that leads out of it, through "..", or
  through a symlink that the sandbox itself made, is refused; an absolute path is taken
  as relative to the workspace. Whatever is tried, nothing outside the workspace is
  revealed and nothing appears there.

  Each scenario has the sandbox make a directory "outside" next to its workspace, holding
  a secret, a symlink "link" in its workspace pointing there, and a symlink "dangling" to a
  file there that does not exist yet. {outside} stands for
  that directory's absolute path as the sandbox sees it.

  Background:
    Given a session of the python interpreter
    And next to the workspace, a directory "outside" holds a secret, "link" in the workspace points to it, and "dangling" points to a file there that does not exist yet

  Scenario Outline: <operation> "<path>" is refused
    When I <operation> "<path>"
    Then the call is refused because the path leaves the workspace
    And nothing outside the workspace is revealed or changed

    Examples: Through ".."
      | operation                      | path                   |
      | upload a file to               | ../outside/planted.txt |
      | download                       | ../outside/secret.txt  |
      | list the directory             | ../outside             |
      | run a command in the directory | ../outside             |

    Examples: Through a symlink the sandbox made
      | operation                      | path                    |
      | upload a file to               | link/planted.txt        |
      | upload a file to               | link/newdir/planted.txt |
      | upload a file to               | dangling                |
      | download                       | link/secret.txt         |
      | list the directory             | link                    |
      | run a command in the directory | link                    |

  Scenario Outline: An absolute path stays inside the workspace: <operation> "<path>"
    When I <operation> "<path>"
    Then nothing outside the workspace is revealed or changed

    Examples:
      | operation                      | path                  |
      | upload a file to               | {outside}/planted.txt |
      | download                       | {outside}/secret.txt  |
      | list the directory             | {outside}             |
      | run a command in the directory | {outside}             |

  Scenario: A file uploaded to an absolute path is kept in the workspace and comes back unchanged
    When I upload a file to "{outside}/planted.txt"
    Then the upload succeeds
    And "{outside}/planted.txt" downloaded from the workspace holds what was uploaded
    And nothing outside the workspace is revealed or changed
