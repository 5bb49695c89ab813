"""How a call names its session, and how the Router refuses one it does not know."""

# The header naming the session of a call and of its answer (upstream
# pkg/router/handlers.go:63 and :356); header names match in any case.
SESSION_HEADER = "x-agentcube-session-id"
# The code of the Router's 404 for an unknown or ended session (upstream
# pkg/api/errors.go:56-58, since PR #460).
SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
