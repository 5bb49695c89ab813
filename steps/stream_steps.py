"""Steps about streams through the Router: events, answers of unknown length, WebSockets,
and many callers streaming at once."""

from behave import given, then, when

from acceptance.domain.sessions import Sessions
from acceptance.domain.step_types import StepContext
from acceptance.domain.streams import Streams, Together


@when("the agent streams a series of events to me in the session")
def step_read_events(context: StepContext) -> None:
    context.world.part(Streams).read_events(past_idle_timeout=False)


@when("the agent streams events to me in the session for longer than its idle timeout")
def step_read_events_past_idle_timeout(context: StepContext) -> None:
    context.world.part(Streams).read_events(past_idle_timeout=True)


@then("every event arrives, in order")
def step_every_event(context: StepContext) -> None:
    context.world.part(Streams).expect_every_event()


@then("the first event reached me well before the agent sent its last one")
def step_events_as_produced(context: StepContext) -> None:
    context.world.part(Streams).expect_events_as_produced()


@when("the agent answers me in the session in chunks, without telling the answer's length")
def step_read_chunks(context: StepContext) -> None:
    context.world.part(Streams).read_chunks()


@then("every chunk arrives, whole and in order")
def step_every_chunk(context: StepContext) -> None:
    context.world.part(Streams).expect_every_chunk()


@then("the session still answers after the stream, from the same sandbox")
def step_session_answers_after_stream(context: StepContext) -> None:
    context.world.part(Sessions).expect_still_served("after its stream")


@when("I hold a WebSocket conversation with the agent in the session, {idle:IdleHalfway}")
def step_converse(context: StepContext, idle: bool) -> None:
    context.world.part(Streams).converse(past_read_timeout=idle)


@then("the Router switched the call to WebSocket in the session")
def step_switched(context: StepContext) -> None:
    context.world.part(Streams).expect_switched_in_session()


@then("every message came back in order, text as text and binary as binary")
def step_echoed_in_order(context: StepContext) -> None:
    context.world.part(Streams).expect_echoed_in_order()


@then("the conversation was served by the session's own sandbox")
def step_served_by_session_sandbox(context: StepContext) -> None:
    context.world.part(Streams).expect_served_by_the_session_sandbox()


@then("the conversation closed cleanly")
def step_clean_close(context: StepContext) -> None:
    context.world.part(Streams).expect_clean_close()


@then("the sandbox received none of the callers' tokens over the WebSocket")
def step_no_token_over_websocket(context: StepContext) -> None:
    context.world.part(Streams).expect_no_caller_token()


@given(
    "as many callers as the concurrency limit allows, up to {most:d}, each with a "
    "session of the echo agent of its own"
)
def step_callers_with_sessions(context: StepContext, most: int) -> None:
    context.world.part(Streams).open_sessions_of_callers(most)


@when("they all {act:Together} in their sessions at the same moment")
def step_act_together(context: StepContext, act: Together) -> None:
    context.world.part(Streams).act_together(act)


@then("each caller got exactly its own {answers:OwnAnswers}, from its own session's sandbox")
def step_each_own(context: StepContext, answers: Together) -> None:
    context.world.part(Streams).expect_each_own(answers)
