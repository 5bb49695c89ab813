"""The localcubes the Router replays run against (tests/recordings/router_replay.py), as
fixtures of every test here: each starts only when a test asks for it."""

from tests.recordings.router_replay import (  # noqa: F401 (fixtures, found here by pytest)
    capture_interpreter_cube,
    limited_cube,
    main_cube,
    redis_cube,
    slow_start_cube,
)
