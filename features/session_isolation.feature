@code-interpreter @security
Feature: Sessions are isolated from each other

  Each session has a sandbox and a workspace of its own: what one session writes, no
  other session can read, even under the same file name. Session ids are random UUIDs that
  are never handed out twice, so an id can neither be guessed nor inherited.

  @id.file-not-shared
  Scenario: A file written in one session cannot be read from another
    Given two sessions of the python interpreter, "A" and "B"
    When session "A" stores "note.txt" holding "written by A"
    Then session "B" cannot find "note.txt"

  @id.same-file-name
  Scenario: Two sessions writing the same file name keep their own contents
    Given two sessions of the python interpreter, "A" and "B"
    When session "A" stores "note.txt" holding "written by A"
    And session "B" stores "note.txt" holding "written by B"
    Then session "A" reads "written by A" from "note.txt"
    And session "B" reads "written by B" from "note.txt"

  @agent-runtime @id.ids-never-reused
  Scenario: Session ids are random UUIDs, never handed out twice
    When I open and close 5 sessions of the echo agent, one after another
    Then each of them got a UUID v4 session id that no earlier session of the run had
