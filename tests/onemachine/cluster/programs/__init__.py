"""Stand-in programs for the one-machine cluster's tests, each run under a real program's
name from a stand-in bin-dir (stand_ins.cluster_bin_dir) with the flags the launcher gives
the real one: the API server (fake_api over TLS), the controller-manager's few controllers
the cluster needs, redis's PING, and the health endpoints of the rest."""
