from __future__ import annotations

from acceptance.core.evidence import (
    REDACTED,
    SESSION_HEADER,
    Exchange,
    ExchangeLog,
    describe_response,
    excerpt,
    redact,
    register_secret,
)


def test_bearer_credentials_are_masked_anywhere() -> None:
    assert redact("header: Bearer abc.def-ghi and bearer xyz") == (
        f"header: Bearer {REDACTED} and bearer {REDACTED}"
    )


def test_a_registered_secret_is_masked_in_urls_and_bodies() -> None:
    register_secret("t0k3n")
    assert redact("http://router.test/?token=t0k3n body t0k3n") == (
        f"http://router.test/?token={REDACTED} body {REDACTED}"
    )


def test_no_secret_registers_nothing() -> None:
    register_secret(None)
    register_secret("")
    assert redact("nothing to hide") == "nothing to hide"


def test_an_exchange_hides_credentials_in_headers_and_bodies() -> None:
    register_secret("t0k3n")
    exchange = Exchange(
        method="POST",
        url="http://router.test/v1/x?key=t0k3n",
        request_headers={"Authorization": "Bearer t0k3n", "X-Trace": "t0k3n", "Accept": "*/*"},
        request_body=b'{"token": "t0k3n"}',
        status=200,
        reason="OK",
        response_headers={"Set-Cookie": "session=abc"},
        response_body=b'{"echo": "Bearer t0k3n"}',
    )
    text = ExchangeLog([exchange]).format()
    assert "t0k3n" not in text
    assert "session=abc" not in text
    assert f"Authorization: {REDACTED}" in text
    assert "Accept:" not in text  # routine request headers are left out


def test_an_exchange_without_answer_shows_the_error() -> None:
    exchange = Exchange("GET", "http://router.test/health/ready", {}, None, error="refused")
    assert "GET http://router.test/health/ready -> no answer: refused" in exchange.format()


def test_excerpts_are_bounded_and_binary_safe() -> None:
    assert excerpt(b"\xff\xfe\x00") == "(3 bytes of binary data)"
    assert excerpt("x" * 1000, limit=10) == "xxxxxxxxxx... (1000 characters)"
    assert excerpt(b"") == "(empty)"


def test_a_long_body_is_redacted_up_to_its_excerpt_without_showing_a_cut_secret() -> None:
    register_secret("s3cr3t-value")
    body = "s3cr3t-value " * 3 + "x" * 18 + "s3cr3t-value" + "y" * 100_000
    for limit in range(30, 80):  # the second secret cut at every place
        assert excerpt(body, limit) == f"{redact(body)[:limit]}... ({len(body)} characters)"
    assert excerpt(body * 100, 40).startswith(f"{REDACTED} {REDACTED} {REDACTED} xxxxxxx...")


def test_a_secret_holding_a_shorter_secret_is_not_shown_in_part() -> None:
    register_secret("QXyXyXyXyXyZ")
    register_secret("Xy")
    body = "QXyXyXyXyXyZ" * 3 + "q" * 300
    for limit in range(10, 40):
        assert excerpt(body, limit) == f"{redact(body)[:limit]}... ({len(body)} characters)"


def test_a_body_whose_redacted_text_fits_is_shown_whole() -> None:
    register_secret("t" * 40)
    body = "x" * 580 + "t" * 40
    assert excerpt(body) == "x" * 580 + REDACTED


def test_a_described_response_shows_status_request_headers_and_body(answer) -> None:
    register_secret("t0k3n")
    text = describe_response(
        answer(404, {"error": "not found t0k3n"}, headers={"x-agentcube-session-id": "s-1"})
    )
    assert text.startswith("POST http://router.test/")
    assert " -> 404 Not Found in " in text.splitlines()[0]
    assert "  < x-agentcube-session-id: s-1" in text
    assert f'  < {{"error": "not found {REDACTED}"}}' in text


def test_a_run_of_alike_polls_is_shown_once_with_its_count() -> None:
    def poll(status: int) -> Exchange:
        return Exchange("GET", "http://lc.test/localcube/v1/sandboxes", {}, None, status, "OK")

    log = ExchangeLog([poll(200), poll(200), poll(200), poll(500)])
    lines = [line for line in log.format().splitlines() if line.startswith("[")]
    assert lines[0].startswith("[1-3, 3 alike] GET http://lc.test/localcube/v1/sandboxes")
    assert lines[1].startswith("[4] GET")


def _call(session: str | None = None, answered: str | None = None, body: bytes = b"{}") -> Exchange:
    return Exchange(
        "POST",
        "http://router.test/v1/namespaces/default/agent-runtimes/echo-agent/invocations/echo",
        {SESSION_HEADER: session} if session else {},
        body,
        200,
        "OK",
        {SESSION_HEADER: answered} if answered else {},
    )


def test_calls_that_carried_different_session_ids_are_never_folded() -> None:
    log = ExchangeLog([_call("s-1"), _call("s-2"), _call("s-2")])
    lines = [line for line in log.format().splitlines() if line.startswith("[")]
    assert [line.split(" ")[0] for line in lines] == ["[1]", "[2-3,"]
    assert f"{SESSION_HEADER}: s-1" in log.format()


def test_answers_that_opened_different_sessions_are_never_folded() -> None:
    log = ExchangeLog([_call(answered="s-1"), _call(answered="s-2")])
    assert "alike" not in log.format()
    assert f"{SESSION_HEADER}: s-1" in log.format()


def test_calls_with_different_bodies_are_never_folded() -> None:
    log = ExchangeLog([_call("s-1", body=b'{"input": "x = 10"}'), _call("s-1", body=b"print(x)")])
    assert "alike" not in log.format() and "x = 10" in log.format()
