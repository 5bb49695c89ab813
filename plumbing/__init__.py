"""Plumbing that localcube, the one-machine cluster and the project's tests share, none of it
the contract's vocabulary: the certificates of the TLS servers they start (`certificates`)
and the argparse types of their command lines (`arguments`).

Neutral, as `agentcube_contract` is: it imports neither the suite, nor localcube, nor
onemachine (tests/test_layout.py).
"""
