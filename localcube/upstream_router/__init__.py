"""What upstream's own Router needs to run in front of localcube (`--store`,
`--router-identity`): upstream's session records, byte for byte (session_records), kept in
Redis or Valkey with upstream's commands (redis_records) in step with the SQLite store
(mirrored_store), and the Router's identity Secret served as the Kubernetes API serves it
(identity), in Kubernetes' protobuf encoding (kube_protobuf)."""
