"""redis-server as the launcher's probe and stop need it: `--bind HOST --port PORT`, PING
answered PONG, every other command an error (nothing here stores data)."""

from __future__ import annotations

import socketserver
import threading

from tests.onemachine.cluster.programs.flags import parse, wait_for_sigterm


class _Connection(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            if line.strip().upper() == b"PING":
                self.wfile.write(b"+PONG\r\n")
            else:
                self.wfile.write(b"-ERR the stand-in redis-server answers PING only\r\n")


def main() -> None:
    flags = parse()
    server = socketserver.ThreadingTCPServer((flags["bind"], int(flags["port"])), _Connection)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"stand-in redis-server on {flags['bind']}:{flags['port']}", flush=True)
    wait_for_sigterm()
    server.shutdown()
