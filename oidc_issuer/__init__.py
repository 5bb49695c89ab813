"""An OIDC issuer for test subjects, on loopback: the discovery document and JWKS that
upstream's Router reads with go-oidc (pkg/router/oidc.go:66-89), and RS256 access tokens
for the subjects a run needs, good and deliberately bad; optionally as a Keycloak realm whose
token endpoint grants client credentials to the clients of a file, as upstream's e2e asks
Keycloak for tokens (clients.py, token_endpoint.py).

It stands apart from the suite, localcube and the one-machine cluster (each may import it;
it imports none of them, tests/test_layout.py), because all three start it: the suite for
the localcube it starts, the one-machine cluster for upstream's Router, a person by hand
for docs/own-router.md (``python -m oidc_issuer``).

The signing is PyJWT's with cryptography's keys, both pinned already for localcube's own
request signing (localcube/signing.py): a well-kept library, and no second JOSE stack in
the runtime. The tests read the issuer with another library (joserfc), as a Router would.
"""
