@code-interpreter @security
Feature: The workspace jail

  Every file operation through the Router, and the working directory of every command,
  stays inside the session's workspace. A path that leads out of it, through "..", or
  through a symlink that the sandbox itself made, is refused; an absolute path is taken
  as relative to the workspace. Whatever is tried, nothing outside the workspace is
  revealed and nothing appears there.

  In each scenario the sandbox itself makes a directory "outside" next to its workspace, and
  two links in its workspace that lead there.

  Background:
    Given a session of the python interpreter
    And next to the workspace, a directory "outside" that holds a secret
    And a link "link" in the workspace to the outside directory
    And a link "dangling" in the workspace to a file of the outside directory that does not exist yet

  @id.escape-refused
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

  @id.absolute-inside
  Scenario Outline: An absolute path stays inside the workspace: <attempt>, by its absolute path
    When I <attempt>, by its absolute path
    Then nothing outside the workspace is revealed or changed

    Examples:
      | attempt                                         |
      | upload a file to the outside directory          |
      | download the secret from the outside directory  |
      | list the outside directory                      |
      | run a command in the outside directory          |

  @id.absolute-round-trip
  Scenario: A file uploaded to an absolute path is kept in the workspace and comes back unchanged
    When I upload a file to the outside directory, by its absolute path
    Then the upload succeeds
    And the file downloaded by that same path holds what was uploaded
    And nothing outside the workspace is revealed or changed
