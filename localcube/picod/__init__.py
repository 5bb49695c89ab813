"""PicoD-compatible daemon: the sandbox of every localcube CodeInterpreter session.

Serves the HTTP API of upstream PicoD (volcano-sh/agentcube pkg/picod: server.go, auth.go,
execute.go, files.go) with its status codes, JSON bodies and error texts:

    GET  /health                 no authentication
    POST /api/execute            run one command (an argv) in the workspace
    POST /api/files              upload: JSON with base64 content, or multipart/form-data
    GET  /api/files?path=DIR     list a directory
    GET  /api/files/<path>       download a file

    python -m localcube.picod --workspace DIR [--port PORT] [--auth jwt|none]

The port is --port, as upstream's daemon takes it, else $PORT; HOST (default 127.0.0.1)
comes from the environment. With --auth jwt, the
default, every /api request needs `Authorization: Bearer <JWT>` signed with RS256/384/512 by
the key whose PEM public half is in PICOD_AUTH_PUBLIC_KEY.

Modules: gocompat (Go's texts), binding (request bodies), auth (JWT), commands (execution),
workspace (the path jail), files (file operations), servecontent (downloads: ranges),
compression (the gzip middleware's rules), handlers (the API), server (app, middlewares,
serve, command line).
"""
