"""A capture sandbox, run by localcube as a sandbox's program (standard library only, as a
sandbox's python3 has): it records every request it receives, one JSON line each in the
file `--capture` names, and answers as the recorder's capture sandbox did
(upstream-recordings README, router-to-sandbox.jsonl `response`).

`--behave` makes it a faulty sandbox instead: `refuse` (closes its listener once its
readiness probe reached it), `hang-up` (accepts and closes), `stall` (never accepts, so its accept
queue stays full), `silent` (accepts and never answers), `never-ready` (listens nowhere),
`exit` (exits at once).

`/untyped/<kind>` is answered with no Content-Type: `text`, `html`, `binary` or `empty`
bytes of known length, or `streamed` text in chunks; gzipped, with its Content-Encoding,
for a request that asks for gzip.
"""

import argparse
import base64
import gzip
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OK = b'{"ok":true}'
COMPRESSED = b'{"ok":true,"compressed":"' + b"z" * 100 + b'"}'
HOP_BY_HOP_ANSWER = (
    ("Connection", "X-Drop-Me"),
    ("X-Drop-Me", "1"),
    ("Keep-Alive", "timeout=5"),
    ("Proxy-Authenticate", "x"),
)
UNTYPED = {
    "text": b"hello, world\n",
    "html": b"\n  <!doctype html><p>hello</p>",
    "binary": bytes(range(32)),
    "empty": b"",
    "streamed": b"hello, world\n",
}
_lock = threading.Lock()


def serve(capture: str, delay: float, address: tuple[str, int]) -> None:
    class Capture(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.answer()

        do_POST = do_GET

        def answer(self) -> None:
            body = self.body()
            with _lock, open(capture, "a", encoding="utf-8") as out:
                entry = {
                    "request_line": self.requestline,
                    "headers": list(self.headers.items()),
                    "body_b64": base64.b64encode(body).decode(),
                }
                out.write(json.dumps(entry) + "\n")
            time.sleep(delay)
            if self.path.startswith("/untyped/"):
                self.untyped(self.path.removeprefix("/untyped/"))
                return
            data, extra = OK, []
            if self.path == "/gzip" and "gzip" in self.headers.get("Accept-Encoding", ""):
                data, extra = gzip.compress(COMPRESSED), [("Content-Encoding", "gzip")]
            elif self.path == "/hopbyhop":
                extra = list(HOP_BY_HOP_ANSWER)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Sandbox-Header", "kept")
            for name, value in extra:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def untyped(self, kind: str) -> None:
            data = UNTYPED[kind]
            self.send_response(200)
            if "gzip" in self.headers.get("Accept-Encoding", ""):
                data = gzip.compress(data)
                self.send_header("Content-Encoding", "gzip")
            if kind != "streamed":
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))

        def body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                while self.rfile.readline() not in (b"\r\n", b""):
                    pass
                return b"".join(chunks)
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def log_message(self, *_: object) -> None:
            pass

    ThreadingHTTPServer(address, Capture).serve_forever()


def misbehave(behaviour: str, address: tuple[str, int]) -> None:
    if behaviour == "exit":
        raise SystemExit(3)
    if behaviour == "never-ready":
        time.sleep(3600)
    listener = socket.create_server(address, backlog=0 if behaviour == "stall" else 128)
    if behaviour == "refuse":  # ready (localcube dials, then GETs the readiness path) no more
        listener.accept()[0].close()
        probe = listener.accept()[0]
        listener.close()
        probe.recv(65536)
        probe.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        probe.close()
    while behaviour in ("hang-up", "silent"):
        connection = listener.accept()[0]
        if behaviour == "hang-up":
            connection.close()
        else:
            threading.Thread(target=lambda c=connection: (time.sleep(3600), c), daemon=True).start()
    time.sleep(3600)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--capture")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--behave")
    parser.add_argument("--port", type=int, default=None)  # as a PicoD command is given it
    parser.add_argument("--workspace")
    options = parser.parse_args()
    port = options.port if options.port is not None else int(os.environ["PORT"])
    address = (os.environ.get("HOST", "127.0.0.1"), port)
    if options.behave:
        misbehave(options.behave, address)
    else:
        serve(options.capture, options.delay, address)


if __name__ == "__main__":
    main()
