"""A container runtime on one machine: containerd, runc and the CNI bridge in a private
namespace of their own, and images made locally for it (no registry). README.md's module
map says which module does what."""
