@agent-runtime
Feature: Streams through the Router

  Agents stream: an LLM agent sends its tokens as server-sent events, a long tool run
  reports progress in an answer of unknown length, an interactive agent speaks WebSocket.
  The Router passes each event on as the agent produces it, passes an answer of unknown
  length through whole and unbuffered, and switches a call in a session to WebSocket,
  served by that session's sandbox, for as long as the conversation lasts. A stream counts
  as activity of its session, and many callers streaming at once each get only their own.

  @streaming @id.events-as-produced
  Scenario: An agent's events reach the caller as the agent produces them
    Given a session of the echo agent
    When the agent streams a series of events to me in the session
    Then every event arrives, in order
    And the first event reached me well before the agent sent its last one

  @streaming @id.unknown-length
  Scenario: An answer of unknown length arrives whole and in order
    Given a session of the echo agent
    When the agent answers me in the session in chunks, without telling the answer's length
    Then every chunk arrives, whole and in order

  @streaming @id.websocket-in-session
  Scenario: A WebSocket conversation in a session is echoed in order by the session's own sandbox
    Given a session of the echo agent
    When I hold a WebSocket conversation with the agent in the session, in text and binary
    Then the Router switched the call to WebSocket in the session
    And every message came back in order, text as text and binary as binary
    And the conversation was served by the session's own sandbox
    And the conversation closed cleanly

  @streaming @security @requires.auth @id.websocket-token
  Scenario: A WebSocket conversation never shows the caller's token to the sandbox
    Given a session of the echo agent
    When I hold a WebSocket conversation with the agent in the session, in text and binary
    Then the sandbox received none of the callers' tokens over the WebSocket

  @streaming @slow @id.websocket-past-read-timeout
  Scenario: A WebSocket conversation outlives the Router's read timeout
    Given a session of the echo agent
    When I hold a WebSocket conversation with the agent in the session, idle halfway for longer than the Router's read timeout
    Then every message came back in order, text as text and binary as binary
    And the conversation closed cleanly

  @streaming @ttl @slow @requires.runtime-admin @id.stream-past-idle-timeout
  Scenario: A stream longer than the idle timeout keeps its session alive
    Given an echo agent with a short idle timeout
    And a session of the echo agent with a short idle timeout
    When the agent streams events to me in the session for longer than its idle timeout
    Then every event arrives, in order
    And the session still answers after the stream, from the same sandbox

  @streaming @reliability @serial @id.many-callers-at-once
  Scenario Outline: Many callers at once each get exactly their own <answers>
    Given as many callers as the concurrency limit allows, up to 8, each with a session of the echo agent of its own
    When they all <act> in their sessions at the same moment
    Then each caller got exactly its own <answers>, from its own session's sandbox

    Examples:
      | act                           | answers  |
      | call the agent                | answer   |
      | read a stream of events       | events   |
      | hold a WebSocket conversation | messages |
