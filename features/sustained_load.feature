@code-interpreter @load @serial
Feature: Sustained load

  Under a steady stream of new sessions, as upstream's own load tests send, the platform
  serves them all: each session is opened by a first command, which must print what it
  was asked to, and is closed once it has answered. The run reports the share of sessions
  that succeeded, the percentiles of their first calls' latency, and their errors by
  kind; the scenario requires that at least the configured share succeeded (all of them,
  unless configured otherwise).

  These scenarios take a while and load the whole target, so the default run leaves them
  out: include them with --tags=@load.

  @id.load
  Scenario Outline: Sessions of the <interpreter> opened at a steady rate are served
    When sessions of the <interpreter> are opened at a steady rate, each running one command
    Then at least the required share of those sessions succeeded

    Examples:
      | interpreter           |
      | python interpreter    |
      | warm-pool interpreter |
