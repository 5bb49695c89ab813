@code-interpreter @warm-pool @requires.sandbox-observation
Feature: Warm pools

  A code interpreter may keep a number of sandboxes started in advance: its warm pool. The
  first call of a new session is then served by one of them, without waiting for a sandbox
  to start, and the pool starts a replacement. An interpreter without a pool starts a
  sandbox for each new session; callers see no other difference but the time: a first call
  served from the pool waits for no sandbox to start, so it takes little longer than a call
  in a session already open, however long a sandbox takes to start.

  @serial @id.pool-serves
  Scenario: The first call is served by a sandbox that was waiting in the pool, which refills
    Given the warm pool of the warm-pool interpreter is full
    When I run code that prints the sum of 1 and 1 in the warm-pool interpreter without a session
    Then the command prints "2"
    And the session is served by a sandbox that was waiting in the pool
    And the warm pool of the warm-pool interpreter is soon full again

  @serial @id.pool-close
  Scenario: Closing a session that came from the pool ends its sandbox, and the pool is full again
    Given the warm pool of the warm-pool interpreter is full
    And a session of the warm-pool interpreter served by a sandbox that was waiting in the pool
    When the session is closed
    Then the sandbox that came from the pool is gone
    And the warm pool of the warm-pool interpreter is soon full again

  @id.no-pool
  Scenario: Without a pool, the first call starts a sandbox for the session and works the same
    Given the python interpreter has no warm pool
    When I run code that prints the sum of 1 and 1 in the python interpreter without a session
    Then the command prints "2"
    And the session is served by a sandbox started for it

  @serial @id.pool-faster
  Scenario: A first call served from the warm pool waits for no sandbox to start
    Given the warm pool of the warm-pool interpreter is full
    When I time the first calls of new sessions of the warm-pool interpreter
    And I time calls in the last of those sessions
    Then the fastest first call took at most half a second longer than a call in its session
