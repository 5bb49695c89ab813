"""A pod as local processes: its sandbox (namespaces, address, scratch root) and its
containers, started and stopped as a container runtime does.

A sandbox is a holder process (`onemachine.node.pod_init`, the pause container) in new
network, UTS, mount and PID namespaces, with the pod's name as hostname and an overlay of
the machine's file system whose writes land in the pod's directory, and empty /root, /home,
/tmp, /var/tmp and /run of its own (`pod_init.PRIVATE_DIRS`). Each container enters
those namespaces and gets a PID namespace of its own (`onemachine.node.container_init`) whose
PID 1 is the container's command: as in a container, a PID 1 that installed no SIGTERM
handler is not stopped by SIGTERM, and killing PID 1 ends every process it started.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from ipaddress import IPv4Address
from pathlib import Path

import onemachine
from onemachine.netns import NamespaceUnavailable
from onemachine.node.container_logs import OutputRecorder, instance_log
from onemachine.node.pod_init import HOSTS_FILE, PRIVATE_DIRS, RESOLV_CONF_FILE
from onemachine.node.pod_network import PodNetwork

# Docker's defaults for a container whose image and spec set no PATH or HOME.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_HOME = "/root"
_HOSTNAME_MAX = 63  # the kubelet truncates a pod's hostname so
_HOLDER_READY_TIMEOUT = 10.0
_HOLDER_EXIT_TIMEOUT = 5.0
_CHILD_LOOKUP_TIMEOUT = 2.0
_OUTPUT_DRAIN_TIMEOUT = 2.0  # how long wait() gives the log to take a container's last output
_SIGTERM_BIT = 1 << (signal.SIGTERM - 1)

# A pod's /etc/resolv.conf. A cluster's kubelet writes the cluster DNS (`nameserver <cluster
# DNS Service IP>`, `search <namespace>.svc.cluster.local svc.cluster.local cluster.local`,
# `options ndots:5`) or, with no cluster DNS configured, falls back to the node's own
# resolv.conf (kubernetes pkg/kubelet/network/dns/dns.go, getPodDNSType). There is no
# cluster DNS here, and the machine's name servers are out of the pod network's reach: a
# lookup would wait out their timeouts (10 s, measured) before failing. Nothing answers on
# the pod's loopback, so the refusal of 127.0.0.1:53 fails an unknown name at once; the
# options bound the wait should a pod's packets be dropped instead.
RESOLV_CONF = (
    "# onemachine: no cluster DNS; names not in /etc/hosts fail at once\n"
    "nameserver 127.0.0.1\n"
    "options timeout:1 attempts:1\n"
)


def managed_hosts(address: IPv4Address, hostname: str) -> str:
    """A pod's /etc/hosts as the kubelet writes it (kubernetes pkg/kubelet/kubelet_pods.go,
    managedHostsFileContent; a pod without hostAliases or subdomain)."""
    return (
        "# Kubernetes-managed hosts file.\n"
        "127.0.0.1\tlocalhost\n"
        "::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\n"
        "fe00::0\tip6-mcastprefix\n"
        "fe00::1\tip6-allnodes\n"
        "fe00::2\tip6-allrouters\n"
        f"{address}\t{hostname}\n"
    )


class SandboxError(RuntimeError):
    """A pod's sandbox could not be made."""


class ContainerStartError(RuntimeError):
    """A container's command could not be started."""


@dataclass(frozen=True)
class ExitStatus:
    """How a container ended; `exit_code` is 128 + `signal` when a signal ended it."""

    exit_code: int
    signal: int | None

    @classmethod
    def of(cls, returncode: int) -> ExitStatus:
        return cls(128 - returncode, -returncode) if returncode < 0 else cls(returncode, None)


@dataclass(frozen=True)
class ContainerLaunch:
    """A container to start: `env` is its whole environment (PATH and HOME defaulted as
    Docker does), `working_dir` a path inside the pod (default `/`, made if missing),
    `restart_count` the instance's, naming its log file (`container_logs.instance_log`)."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    working_dir: str | None = None
    restart_count: int = 0


def _children(pid: int) -> list[int]:
    try:
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except (FileNotFoundError, ProcessLookupError):
        return []


def catches_sigterm(pid: int) -> bool:
    """Whether process `pid` installed a SIGTERM handler (SigCgt of /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) & _SIGTERM_BIT)


class ContainerProcess:
    """One running container: `container_init` entering the pod, its child making the
    container's PID namespace, and the command as that namespace's PID 1 (`pid`, in the
    node's view; None if it ended before it could be seen), its stdout and stderr recorded
    in `log_path` (container_logs)."""

    def __init__(self, name: str, process: subprocess.Popen[bytes], output: OutputRecorder) -> None:
        self.name = name
        self.output = output
        self.log_path = output.path
        self.started_at = time.time()
        self._process = process
        self._pid: int | None = None
        self._pidfd: int | None = None  # the command's, to signal it and no other process
        self._lock = threading.Lock()
        deadline = time.monotonic() + _CHILD_LOOKUP_TIMEOUT
        while self.pid is None and self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)

    @property
    def pid(self) -> int | None:
        """The command's pid, once the two forks above it have started it."""
        with self._lock:
            if self._pid is None and self._process.poll() is None:
                for in_pod in _children(self._process.pid):
                    for command in _children(in_pod):
                        self._hold(in_pod, command)
            return self._pid

    def _hold(self, in_pod: int, command: int) -> None:
        """A pidfd of `command`, if it is still `in_pod`'s child once opened (then the pidfd
        is that child's, not a later process's of the same pid)."""
        try:
            pidfd = os.pidfd_open(command)
        except ProcessLookupError:
            return
        if command in _children(in_pod):
            self._pid, self._pidfd = command, pidfd
        else:
            os.close(pidfd)

    def _signal(self, signalnum: int) -> None:
        with self._lock:
            if self._pidfd is not None:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self._pidfd, signalnum)

    def _ended(self, returncode: int) -> ExitStatus:
        with self._lock:
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
        return ExitStatus.of(returncode)

    def poll(self) -> ExitStatus | None:
        returncode = self._process.poll()
        return None if returncode is None else self._ended(returncode)

    def wait(self, timeout: float | None = None) -> ExitStatus | None:
        """Its exit status once it ended (and its log has its last output), or None if it
        still runs after `timeout` seconds."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            ended = self._ended(self._process.wait(timeout))
            self.output.wait(_OUTPUT_DRAIN_TIMEOUT)
            return ended
        return None

    def stop(self, grace_seconds: float) -> ExitStatus:
        """SIGTERM if the command catches it, SIGKILL of the whole container at the end of
        the grace period (a PID 1 without a handler ignores SIGTERM: it waits it out)."""
        if self.poll() is None and grace_seconds > 0:
            if self.pid is not None and catches_sigterm(self.pid):
                self._signal(signal.SIGTERM)
            if (ended := self.wait(grace_seconds)) is not None:
                return ended
        return self.kill()

    def kill(self) -> ExitStatus:
        """SIGKILL of the container's PID 1, which ends its whole PID namespace (and the
        `container_init` processes above it, which end as it did)."""
        if self.pid is not None:
            self._signal(signal.SIGKILL)
        if (ended := self.wait(1.0)) is not None:
            return ended
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)
        return self._ended(self._process.wait())


class _PodInit:
    """The pod's PID 1, held by descriptors (a pidfd and one of its /proc directory), never by
    its pid alone: a pid that ended may be another process's -- on the host -- by now."""

    def __init__(self, holder: subprocess.Popen[bytes], pid: int) -> None:
        self.pid = pid
        gone = SandboxError(f"the pod's PID 1 (pid {pid}) ended before it was ready")
        try:
            self._pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            raise gone from None
        try:
            self.proc = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY)
            with open(self.open("stat")) as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            # the holder's child, alive now: the process both descriptors were opened on
            if parent != holder.pid or not self.alive():
                raise gone
        except (FileNotFoundError, ProcessLookupError):
            self.close()
            raise gone from None
        except BaseException:
            self.close()
            raise

    def open(self, name: str) -> int:
        """A descriptor of `name` in its /proc directory (ns/net, root, ...)."""
        return os.open(name, os.O_RDONLY, dir_fd=self.proc)

    @property
    def root(self) -> Path:
        """Its root directory (the pod's), through the descriptor."""
        return Path(f"/proc/self/fd/{self.proc}/root")

    def alive(self) -> bool:
        try:
            signal.pidfd_send_signal(self._pidfd, 0)
        except ProcessLookupError:
            return False
        return True

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def close(self) -> None:
        for descriptor in (self._pidfd, getattr(self, "proc", None)):
            if descriptor is not None:
                os.close(descriptor)


class PodSandbox:
    """One pod's namespaces, address and directory, and the containers started in it."""

    def __init__(
        self,
        directory: Path,
        hostname: str,
        holder: subprocess.Popen[bytes],
        pod_init: _PodInit,
        on_close: Callable[[PodSandbox], None],
        log_directory: Path,
    ) -> None:
        self.directory = directory
        self.log_directory = log_directory  # outlives the sandbox (container_logs)
        self.hostname = hostname
        self.holder_pid = pod_init.pid
        self.address: IPv4Address | None = None
        self._holder = holder
        self._pod_init = pod_init
        self._containers: list[ContainerProcess] = []
        self._lock = threading.Lock()
        self._on_close = on_close
        self._closed = False

    def start_container(self, launch: ContainerLaunch) -> ContainerProcess:
        """The container started (ContainerStartError if its command is not in the pod)."""
        env = {"PATH": DEFAULT_PATH, "HOME": DEFAULT_HOME, **launch.env}
        working_dir = launch.working_dir or "/"
        spec_of_it = {
            "pod_init_fd": self._pod_init.proc,
            "working_dir": working_dir,
            "argv": list(launch.argv),
            "env": env,
        }
        log_path = instance_log(self.log_directory, launch.name, launch.restart_count)
        with self._lock:  # the pod's descriptors stay open meanwhile: close() waits
            self._refuse_if_closed()
            root = self._pod_init.root
            spec_of_it["bind"] = self._executable(root, launch.argv, env["PATH"], working_dir)
            try:
                (root / working_dir.lstrip("/")).mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise ContainerStartError(
                    f"working directory {working_dir!r}: {error.strerror}"
                ) from None
            spec_reader, spec_writer = os.pipe()
            (stdout, stdout_writer), (stderr, stderr_writer) = os.pipe(), os.pipe()
            try:
                process = _start_module(
                    "onemachine.node.container_init",
                    "--spec-fd",
                    spec_reader,
                    output=(stdout_writer, stderr_writer),
                    also_pass=self._pod_init.proc,
                )
            except BaseException:
                for descriptor in (spec_writer, stdout, stderr):
                    os.close(descriptor)
                raise
            finally:
                for descriptor in (spec_reader, stdout_writer, stderr_writer):
                    os.close(descriptor)
            output = OutputRecorder(log_path, stdout, stderr)
            # an entry that died at once (its log says why) has closed the pipe: its exit
            # status tells the rest
            with contextlib.suppress(BrokenPipeError), os.fdopen(spec_writer, "w") as spec:
                json.dump(spec_of_it, spec)
            container = ContainerProcess(launch.name, process, output)
            # only the running ones are kept, for close() to stop: not every exec probe's
            # and every restart's for the pod's life
            self._containers = [c for c in self._containers if c.poll() is None]
            self._containers.append(container)
        return container

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise ContainerStartError(f"pod sandbox {self.hostname} is closed")

    @staticmethod
    def _executable(root: Path, argv: Sequence[str], path: str, working_dir: str) -> list[str]:
        """Refuse a command that is not an executable file inside the pod, as the runtime's
        `executable file not found in $PATH` does; the machine's installation to bind into
        the pod for it, if any (`_machines_own`)."""
        if not argv:
            raise ContainerStartError("the container has no command: its image maps to none")
        first = argv[0]
        if "/" in first:
            candidates = [Path(working_dir, first)]
        else:
            candidates = [Path(folder or ".", first) for folder in path.split(":")]
        for candidate in candidates:
            if installation := _machines_own(candidate):
                return installation
            inside = root / str(candidate).lstrip("/")
            if inside.is_file() and os.access(inside, os.X_OK):
                return []
        where = "in $PATH" if "/" not in first else "in the pod"
        raise ContainerStartError(f'exec: "{first}": executable file not found {where}')

    def close(self, grace_seconds: float = 0) -> None:
        """Every container stopped (in parallel, each with `grace_seconds`), every process
        of the pod killed, its address released and its directory removed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            containers = list(self._containers)
        _in_parallel([partial(container.stop, grace_seconds) for container in containers])
        # The pod's PID 1 killed, the kernel ends every process of the pod before its parent
        # (the holder) sees it exit and exits itself.
        self._pod_init.kill()
        self._pod_init.close()
        try:
            self._holder.wait(_HOLDER_EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self._holder.pid, signal.SIGKILL)
            self._holder.wait()
        self._on_close(self)
        shutil.rmtree(self.directory, ignore_errors=True)


def _machines_own(command: Path) -> list[str]:
    """Where the machine's program `command` is installed in one of `PRIVATE_DIRS`: for the
    command as found and for each symbolic link it leads through (as a venv's python, in a
    checkout under /tmp, leads to pyenv's under /root), the entry right below that directory
    (/tmp/ci for /tmp/ci/main/.venv/bin/python, /root/.pyenv for
    /root/.pyenv/versions/3.11.7/bin/python3.11), or the virtual environment itself where the
    step lies in one (/tmp/lc/venv, not all of /tmp/lc); and for a virtual environment's
    python, what it runs with (`_venv_needs`). The pod's own copies of those directories are
    empty, so the container gets these bound read-only into the pod before its command
    runs -- those alone, and only for such a command: a pod running anything else (PicoD,
    /bin/sh) sees none of the machine's user data. Empty for a command elsewhere."""
    if not (command.is_file() and os.access(command, os.X_OK)):
        return []
    entries: list[str] = []
    chain = _link_chain(Path(os.path.abspath(command)))
    venv = _venv_of(chain[0])
    for step in [*chain, *(_venv_needs(venv) if venv else [])]:
        for private in PRIVATE_DIRS:
            if step.is_relative_to(private) and step != Path(private):
                in_venv = _venv_of(step)
                if step.is_dir() and not in_venv:
                    entry = str(step)  # a source tree an editable install names: itself
                elif in_venv:
                    entry = str(in_venv)
                else:
                    entry = str(Path(private, step.relative_to(private).parts[0]))
                if entry not in entries and not any(entry.startswith(e + "/") for e in entries):
                    entries.append(entry)
    return entries


def _venv_of(path: Path) -> Path | None:
    """The virtual environment `path` (a file in its bin/) belongs to, if any."""
    venv = path.parent.parent
    return venv if path.parent.name == "bin" and (venv / "pyvenv.cfg").is_file() else None


def _venv_needs(venv: Path) -> list[Path]:
    """What a virtual environment's python needs besides the venv: the base interpreter's
    installation (the prefix of pyvenv.cfg's `home`) and each directory its site-packages'
    .pth files and setuptools' editable finders name (`pip install -e` of a checkout: its
    source tree)."""
    needed: list[Path] = []
    with contextlib.suppress(OSError):
        for line in (venv / "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():  # the base's bin/: its prefix
                needed.append(Path(value.strip()).parent)
    for site in venv.glob("lib/python*/site-packages"):
        for pth in site.glob("*.pth"):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                for line in pth.read_text().splitlines():
                    if line.strip() and not line.startswith(("#", "import ", "import\t")):
                        needed.append(Path(site, line.strip()))
        for finder in site.glob("__editable___*_finder.py"):
            needed.extend(Path(p) for p in _editable_mapping(finder))
    return [Path(os.path.abspath(path)) for path in needed if path.exists()]  # else nothing to bind


def _editable_mapping(finder: Path) -> list[str]:
    """The paths setuptools' editable finder names: its MAPPING (package to source directory)
    and NAMESPACES (namespace package to directories), literals in the module it writes
    (setuptools/command/editable_wheel.py, _FINDER_TEMPLATE)."""
    try:
        module = ast.parse(finder.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return []
    paths: list[str] = []
    for statement in module.body:
        # `MAPPING: dict[str, str] = {...}` in the setuptools of today, `MAPPING = {...}` before
        target: ast.expr
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in ("MAPPING", "NAMESPACES"):
            with contextlib.suppress(ValueError):
                for named in ast.literal_eval(value).values():
                    paths.extend(named if isinstance(named, list) else [named])
    return [str(path) for path in paths]


def _link_chain(path: Path) -> list[Path]:
    """`path`, each path its symbolic links lead to in turn, and its real path."""
    chain = [path]
    while chain[-1].is_symlink() and len(chain) < 40:  # the kernel's own limit on a chain
        chain.append(Path(os.path.abspath(chain[-1].parent / os.readlink(chain[-1]))))
    return [*chain, Path(os.path.realpath(path))]


def _in_parallel(calls: Sequence[Callable[[], object]]) -> None:
    """Each call on a thread of its own, all finished on return. (Not an executor: it
    refuses work once the interpreter is shutting down, as when the node stops.)"""
    threads = [threading.Thread(target=call) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _read_report(descriptor: int, holder: subprocess.Popen[bytes]) -> int:
    """The pod's PID 1 (node's view) from the holder's report, once it says `ready`."""
    said: dict[str, str] = {}
    pending = b""
    deadline = time.monotonic() + _HOLDER_READY_TIMEOUT
    while not {"pid", "ready"} <= said.keys():
        if "unavailable" in said:
            raise NamespaceUnavailable(said["unavailable"])
        if "error" in said:
            raise SandboxError(f"the pod's sandbox could not be made: {said['error']}")
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([descriptor], [], [], left)[0]:
            raise SandboxError(f"the pod's holder was not ready within {_HOLDER_READY_TIMEOUT:g}s")
        chunk = os.read(descriptor, 4096)
        if not chunk:
            raise SandboxError(f"the pod's holder exited (code {holder.wait()}) before ready")
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            word, _, rest = line.decode().partition(" ")
            said[word] = rest
    return int(said["pid"])


class PodRuntime:
    """The node's pod sandboxes, under `root/pods/`, on one pod network; their containers'
    logs under `root/logs/`, which a sandbox's close leaves (`remove_logs` removes them);
    `service_hosts` gives the Service lines of a pod's /etc/hosts for its namespace (the
    Service proxy's)."""

    def __init__(
        self,
        root: Path,
        network: PodNetwork,
        service_hosts: Callable[[str], str] | None = None,
    ) -> None:
        self._pods = root / "pods"
        self._logs = root / "logs"
        self._network = network
        self._service_hosts = service_hosts
        self._sandboxes: set[PodSandbox] = set()
        self._lock = threading.Lock()

    def create(self, namespace: str, name: str, uid: str) -> PodSandbox:
        """A running sandbox for the pod, with its address (raises SandboxError or
        NamespaceUnavailable)."""
        directory = self._pods / f"{namespace}_{name}_{uid}"
        directory.mkdir(parents=True, exist_ok=True)
        hostname = name[:_HOSTNAME_MAX]
        hosts = directory / HOSTS_FILE  # filled once the address is known
        try:
            hosts.touch()
            (directory / RESOLV_CONF_FILE).write_text(RESOLV_CONF)
            holder, holder_pid = _start_holder(directory, hostname)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        try:
            pod_init = _PodInit(holder, holder_pid)
        except BaseException:
            holder.kill()
            holder.wait()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        log_directory = self.log_directory(namespace, name, uid)
        sandbox = PodSandbox(directory, hostname, holder, pod_init, self._forget, log_directory)
        try:
            pod_network = pod_init.open("ns/net")
            try:
                sandbox.address = self._network.attach(pod_network)
            finally:
                os.close(pod_network)
            services = self._service_hosts(namespace) if self._service_hosts else ""
            hosts.write_text(managed_hosts(sandbox.address, hostname) + services)
        except BaseException:
            sandbox.close()
            raise
        with self._lock:
            self._sandboxes.add(sandbox)
        return sandbox

    def log_directory(self, namespace: str, name: str, uid: str) -> Path:
        """Where the pod's containers' logs are (container_logs.instance_log)."""
        return self._logs / f"{namespace}_{name}_{uid}"

    def remove_logs(self, namespace: str, name: str, uid: str) -> None:
        """The pod's logs gone, as a kubelet removes them once the pod is deleted."""
        shutil.rmtree(self.log_directory(namespace, name, uid), ignore_errors=True)

    def _forget(self, sandbox: PodSandbox) -> None:
        if sandbox.address is not None:
            self._network.detach(sandbox.address)
        with self._lock:
            self._sandboxes.discard(sandbox)

    def close(self) -> None:
        """Every sandbox still open closed at once, in parallel (the node stops)."""
        with self._lock:
            sandboxes = list(self._sandboxes)
        _in_parallel([sandbox.close for sandbox in sandboxes])


def _start_module(
    module: str,
    fd_option: str,
    fd: int,
    *arguments: str,
    output: tuple[int, int] | None = None,
    also_pass: int | None = None,
) -> subprocess.Popen[bytes]:
    """`python -S -m module` (of this package, nothing of the node's environment), in a session
    of its own, handed descriptor `fd` through `fd_option` (and `also_pass`, if given), its
    stdout and stderr the descriptors `output` if given (else the node's)."""
    return subprocess.Popen(
        [sys.executable, "-S", "-m", module, fd_option, str(fd), *arguments],
        env={"PYTHONPATH": str(Path(onemachine.__file__).parent.parent)},
        pass_fds=(fd,) if also_pass is None else (fd, also_pass),
        stdin=subprocess.DEVNULL,
        stdout=output[0] if output else None,
        stderr=output[1] if output else None,
        start_new_session=True,
        cwd="/",
    )


def _start_holder(directory: Path, hostname: str) -> tuple[subprocess.Popen[bytes], int]:
    """The pod's holder started, and its PID 1's pid once it is ready."""
    report, report_writer = os.pipe()
    try:
        holder = _start_module(
            "onemachine.node.pod_init",
            "--report-fd",
            report_writer,
            "--hostname",
            hostname,
            "--directory",
            str(directory),
        )
    except BaseException:
        os.close(report)
        raise
    finally:
        os.close(report_writer)
    try:
        return holder, _read_report(report, holder)
    except BaseException:
        holder.kill()  # its PID 1, if any, dies with it
        holder.wait()
        raise
    finally:
        os.close(report)
