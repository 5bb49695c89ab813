"""What the suite can do beside HTTP calls: the Platform interface and the Target (base), one
module per platform (localcube, none, kubernetes/), and the one place that resolves the run's
target (target)."""
