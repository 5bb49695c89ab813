@code-interpreter @warm-pool @requires.sandbox-observation
Feature: Warm pools

  A code interpreter may keep a number of sandboxes started in advance: its warm pool. The
  first call of a new session is then served by one of them, without waiting for a sandbox
  to start, and the pool starts a replacement. An interpreter without a pool starts a
  sandbox for each new session; callers see no other difference. A first call is expected
  to be faster with a pool: the run reports both latencies and the ratio it saw, and a pool
  that makes the first call slower fails.

  @serial
  Scenario: The first call is served by a sandbox that was waiting in the pool, which refills
    Given the warm pool of the warm-pool interpreter is full
    When I run code that prints the sum of 1 and 1 in the warm-pool interpreter without a session
    Then the command prints "2"
    And the session is served by a sandbox that was waiting in the pool
    And the warm pool of the warm-pool interpreter is soon full again

  @serial
  Scenario: Closing a session that came from the pool ends its sandbox, and the pool is full again
    Given the warm pool of the warm-pool interpreter is full
    And a session of the warm-pool interpreter served by a sandbox that was waiting in the pool
    When the session is closed
    Then the sandbox that came from the pool is gone
    And the warm pool of the warm-pool interpreter is soon full again

  Scenario: Without a pool, the first call starts a sandbox for the session and works the same
    Given the python interpreter has no warm pool
    When I run code that prints the sum of 1 and 1 in the python interpreter without a session
    Then the command prints "2"
    And the session is served by a sandbox started for it

  @serial
  Scenario: A warm pool does not make a first call slower
    Given the warm pool of the warm-pool interpreter is full
    When I time the first calls of new sessions of the python interpreter
    And I time the first calls of new sessions of the warm-pool interpreter
    Then the fastest first call of the warm-pool interpreter was not slower than that of the python interpreter
