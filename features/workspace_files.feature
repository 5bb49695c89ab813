@code-interpreter
Feature: Moving files in and out of a session's workspace

  Every code-interpreter session has a workspace directory, which commands run in. Through
  the Router, a caller can upload files into it, list it and download files from it: a
  script goes in, runs, and its result comes back out.

  @id.fibonacci
  Scenario: An uploaded script writes a result that can be downloaded
    Given a session of the python interpreter
    When I upload the script "fibonacci.py" to the workspace
    And I run the uploaded script "fibonacci.py" in the session
    Then the command exits with code 0
    And the workspace lists these files:
      | file         |
      | fibonacci.py |
      | output.json  |
    And "output.json" downloaded from the workspace holds the Fibonacci numbers 0, 1, 1, 2, 3, 5, 8, 13, 21, 34

  @id.large-file-back
  Scenario: A file of several megabytes comes back byte for byte
    Given a session of the python interpreter
    When I upload a file of several megabytes to the workspace
    Then the file downloaded from the workspace is byte for byte the one uploaded

  @id.large-file-listed
  Scenario: The workspace listing shows a large file's full size
    Given a session of the python interpreter
    When I upload a file of several megabytes to the workspace
    Then the workspace listing shows the file with its full size
