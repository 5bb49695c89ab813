"""Pods as local processes: each its own hostname, address and scratch root; containers with
the given environment and working directory, logged, stopped as a container runtime stops
them; nothing of a pod left once it is closed."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import weakref
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from onemachine.node.container_logs import log_text, records
from onemachine.node.pod_network import AddressesExhausted, AddressPool, PodNetwork
from onemachine.node.pod_runtime import (
    DEFAULT_HOME,
    DEFAULT_PATH,
    ContainerLaunch,
    ContainerProcess,
    ContainerStartError,
    ExitStatus,
    PodRuntime,
    PodSandbox,
    SandboxError,
    _machines_own,
)
from tests.onemachine.node.pod_support import wait_for_text
from tests.waiting import satisfying, wait_until

PYTHON = sys.executable
# A PID 1 that installed no SIGTERM handler, and one whose handler says so and exits.
NO_HANDLER = "import time\nprint('up', flush=True)\ntime.sleep(60)\n"
IGNORES = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + NO_HANDLER
# The handler only sets a flag. Python runs a handler between bytecodes of the main program,
# which may be inside print('up')'s flush, holding stdout's lock: a print in the handler
# then fails ("reentrant call") and the program exits 1 (seen on a loaded machine).
HANDLES = (
    "import signal, time\n"
    "stopping = []\n"
    "signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))\n"
    "print('up', flush=True)\n"
    "for _ in range(6000):\n"
    "    if stopping:\n"
    "        print('got SIGTERM', flush=True)\n"
    "        break\n"
    "    time.sleep(0.01)\n"
)
# Children and a grandchild that leaves the session (setsid): all die with the container.
FORKS = (
    "import subprocess, time\n"
    "subprocess.Popen(['sleep', '60'])\n"
    "subprocess.Popen(['sh', '-c', 'sleep 61 & sleep 62; exit'], start_new_session=True)\n"
    "print('up', flush=True)\n"
    "time.sleep(60)\n"
)


def python(name: str, code: str, **launch) -> ContainerLaunch:
    return ContainerLaunch(name, [PYTHON, "-c", code], launch.pop("env", {}), **launch)


def started(sandbox: PodSandbox, launch: ContainerLaunch) -> ContainerProcess:
    """The container, once it printed `up`."""
    container = sandbox.start_container(launch)
    wait_for_text(container.log_path, "up")
    return container


def output(sandbox: PodSandbox, launch: ContainerLaunch) -> str:
    container = sandbox.start_container(launch)
    assert container.wait(10) == ExitStatus(0, None), log_text(container.log_path)
    return log_text(container.log_path)


def namespace_members(pid: int, kind: str) -> set[int]:
    """Every live process in the `kind` namespace (net, pid) of process `pid`."""
    inode = os.stat(f"/proc/{pid}/ns/{kind}").st_ino
    members = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}/ns/{kind}").st_ino == inode:
                    members.add(int(entry))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    return members


def test_each_pod_has_its_own_hostname_address_and_directory(runtime: PodRuntime) -> None:
    first = runtime.create("default", "echo-a", "uid-a")
    second = runtime.create("team", "echo-b", "uid-b")
    hostname = python("main", "import socket; print(socket.gethostname())")
    assert output(first, hostname) == "echo-a\n"
    assert output(second, hostname) == "echo-b\n"
    assert first.address != second.address
    assert first.directory.name == "default_echo-a_uid-a"
    assert second.directory.parent == first.directory.parent
    assert os.uname().nodename not in ("echo-a", "echo-b")


def test_a_long_pod_name_is_cut_to_a_hostname_of_63_characters(runtime: PodRuntime) -> None:
    sandbox = runtime.create("default", "x" * 70, "uid")
    assert sandbox.hostname == "x" * 63
    assert output(sandbox, python("main", "import socket; print(socket.gethostname())")) == (
        "x" * 63 + "\n"
    )


def test_writes_to_the_workspace_and_outside_it_stay_in_the_pods_directory(
    runtime: PodRuntime,
) -> None:
    sandbox = runtime.create("default", "writer", "uid")
    mark = uuid.uuid4().hex
    workspace, outside = f"/workspace-{mark}", f"/outside-{mark}"
    writes = (
        "import os\n"
        "open('inside.txt', 'w').write('in')\n"
        f"os.mkdir('{outside}')\n"
        f"open('{outside}/planted.txt', 'w').write('out')\n"
        f"open('/tmp/{mark}', 'w').write('tmp')\n"
        "print(os.listdir('.'))\n"
    )
    assert output(sandbox, python("main", writes, working_dir=workspace)) == "['inside.txt']\n"
    upper = sandbox.directory / "upper"
    assert (upper / workspace[1:] / "inside.txt").read_text() == "in"
    assert (upper / outside[1:] / "planted.txt").read_text() == "out"
    assert (sandbox.directory / "private" / "tmp" / mark).read_text() == "tmp"
    for on_the_machine in (workspace, outside, f"/tmp/{mark}"):
        assert not Path(on_the_machine).exists()
    # another pod does not see them either
    other = runtime.create("default", "reader", "uid")
    seen = f"import os; print(os.path.exists('{outside}'), os.path.exists('/tmp/{mark}'))"
    assert output(other, python("main", seen)) == "False False\n"


LISTS = (
    "import json, os, sys\n"
    "print(json.dumps({path: sorted(os.listdir(path)) for path in sys.argv[1:]}))\n"
)


def test_a_fresh_pod_has_empty_directories_where_the_machine_keeps_user_data(
    runtime: PodRuntime,
) -> None:
    """Not the machine's /root (its .bashrc, caches, credentials: PicoD's workspace is /root),
    nor its /home, /tmp, /var/tmp or /run (/var/run leads to the pod's /run)."""
    planted = Path(f"/root/planted-{uuid.uuid4().hex}")
    planted.write_text("the machine's")
    try:
        sandbox = runtime.create("default", "fresh", "uid")
        paths = ["/root", "/home", "/tmp", "/var/tmp", "/run", "/var/run"]
        listed = output(sandbox, ContainerLaunch("main", [PYTHON, "-c", LISTS, *paths], {}))
    finally:
        planted.unlink()
    assert json.loads(listed) == {path: _node_python_in(path) for path in paths}


_WRITES = """
import errno, json, os, sys
refused = {}
for path in ("/sys/class/net/lo/mtu", "/proc/sys/net/ipv4/ip_forward"):
    try:  # opened for writing, nothing written: where it opens, nothing changes
        os.close(os.open(path, os.O_WRONLY))
    except OSError as error:
        refused[path] = errno.errorcode[error.errno]
print(json.dumps({"refused": refused, "interfaces": sorted(os.listdir("/sys/class/net"))}))
"""


def test_a_pods_sys_is_its_own_network_namespaces_and_read_only_as_is_proc_sys(
    runtime: PodRuntime,
) -> None:
    """Not the machine's sysfs, read-write: through it a pod run as root could change the
    machine's network interfaces (their mtu, flags)."""
    sandbox = runtime.create("default", "sysfs", "uid")
    assert json.loads(output(sandbox, python("main", _WRITES))) == {
        "refused": {"/sys/class/net/lo/mtu": "EROFS", "/proc/sys/net/ipv4/ip_forward": "EROFS"},
        "interfaces": ["eth0", "lo"],
    }


def _node_python_in(path: str) -> list[str]:
    """What a fresh pod running the node's Python lists in `path`: nothing, or the first
    directory there that this Python is reached through (a checkout under /tmp holding the
    venv) or installed in (pyenv's /root/.pyenv), bound for it."""
    places = (sys.executable, sys.base_prefix)
    return sorted({Path(p).relative_to(path).parts[0] for p in places if p.startswith(path + "/")})


def test_a_write_to_the_pods_root_home_lands_in_the_pods_directory_not_on_the_machine(
    runtime: PodRuntime,
) -> None:
    sandbox = runtime.create("default", "home", "uid")
    name = f"written-{uuid.uuid4().hex}"
    write = (
        f"import os; open('/root/{name}', 'w').write('pod'); print(oct(os.stat('/root').st_mode))"
    )
    assert output(sandbox, python("main", write)) == "0o40700\n"
    assert (sandbox.directory / "private" / "root" / name).read_text() == "pod"
    assert not Path("/root", name).exists()
    other = runtime.create("default", "other", "uid")
    listed = output(other, python("main", "import os; print(os.listdir('/root'))"))
    assert listed == f"{_node_python_in('/root')}\n"


def test_a_command_outside_the_private_directories_sees_an_empty_root_home(
    runtime: PodRuntime,
) -> None:
    """PicoD's case (/opt/upstream/bin/picod, its workspace /root): the node's Python may be
    installed under /root (pyenv's /root/.pyenv), but only a pod running it gets it bound."""
    sandbox = runtime.create("default", "outside", "uid")
    assert output(sandbox, ContainerLaunch("main", ["/bin/sh", "-c", "ls -A /root"], {})) == ""
    # the node's Python, started later in the same pod, still runs there
    assert output(sandbox, python("python", "print('ran')")) == "ran\n"


def test_a_command_linked_from_a_private_directory_brings_each_entry_its_links_pass(
    runtime: PodRuntime,
) -> None:
    """A checkout under /tmp (as a CI clone may be) whose venv's python leads to pyenv's under
    /root: the link in /tmp and the installation it leads to are both bound, read-only."""
    checkout = Path(tempfile.mkdtemp(prefix="lc-linked-", dir="/tmp"))
    try:
        (checkout / "python").symlink_to(PYTHON)
        sandbox = runtime.create("default", "linked", "uid")
        launch = ContainerLaunch("main", [str(checkout / "python"), "-c", "print('ran')"], {})
        assert output(sandbox, launch) == "ran\n"
        listing = ContainerLaunch("list", ["/bin/sh", "-c", "ls -A /tmp"], {})
        assert sorted(output(sandbox, listing).split()) == sorted(
            {checkout.name, *_node_python_in("/tmp")}
        )
        write = f"touch {checkout}/x 2>/dev/null && echo written || echo refused"
        assert (
            output(sandbox, ContainerLaunch("write", ["/bin/sh", "-c", write], {})) == "refused\n"
        )
        assert not (checkout / "x").exists()
    finally:
        shutil.rmtree(checkout)


# What a pod resolves, and the name servers it asks, as one JSON line.
RESOLVES = (
    "import json, socket, sys\n"
    "def addresses(name):\n"
    "    return sorted({info[4][0] for info in socket.getaddrinfo(name, 80)})\n"
    "try:\n"
    "    socket.getaddrinfo(sys.argv[1], 80)\n"
    "    unknown = 'resolved'\n"
    "except socket.gaierror as error:\n"
    "    unknown = 'failed'\n"
    "print(json.dumps({\n"
    "    'hostname': addresses(socket.gethostname()),\n"
    "    'fqdn': socket.getfqdn(),\n"
    "    'localhost': addresses('localhost'),\n"
    "    'unknown': unknown,\n"
    "    'resolv_conf': open('/etc/resolv.conf').read().splitlines(),\n"
    "}))\n"
)


def test_a_pod_resolves_its_hostname_and_localhost_and_fails_an_unknown_name_at_once(
    runtime: PodRuntime,
) -> None:
    machine = {path: Path(path).read_bytes() for path in ("/etc/hosts", "/etc/resolv.conf")}
    sandbox = runtime.create("default", "resolver", "uid")
    unknown = f"no-such-pod-{uuid.uuid4().hex}.example"
    container = sandbox.start_container(
        ContainerLaunch("main", [PYTHON, "-c", RESOLVES, unknown], {})
    )
    assert container.wait(60) == ExitStatus(0, None), log_text(container.log_path)
    seen = json.loads(log_text(container.log_path))
    assert seen["hostname"] == [str(sandbox.address)]
    assert seen["fqdn"] == "resolver"
    assert "127.0.0.1" in seen["localhost"]
    assert seen["unknown"] == "failed"
    # A resolv.conf of the pod's own: the machine's name servers are out of the pod's reach,
    # and asking them, an unknown name would wait out their timeouts (~10 s) before failing.
    # Nothing answers on the pod's loopback, so the name fails at once.
    servers = [line.split()[1] for line in seen["resolv_conf"] if line.startswith("nameserver")]
    assert servers == ["127.0.0.1"], seen["resolv_conf"]
    assert (sandbox.directory / "etc-hosts").read_text().splitlines() == [
        "# Kubernetes-managed hosts file.",
        "127.0.0.1\tlocalhost",
        "::1\tlocalhost ip6-localhost ip6-loopback",
        "fe00::0\tip6-localnet",
        "fe00::0\tip6-mcastprefix",
        "fe00::1\tip6-allnodes",
        "fe00::2\tip6-allrouters",
        f"{sandbox.address}\tresolver",
    ]
    assert {path: Path(path).read_bytes() for path in machine} == machine


def test_a_pod_file_replaces_a_symbolic_link_in_the_pods_root_without_following_it(
    tmp_path: Path,
) -> None:
    """As /etc/resolv.conf under systemd-resolved: a link to a file the pod may not have."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a mount namespace (CI runs as root)")
    (tmp_path / "resolv.conf").write_text("pod's\n")
    (tmp_path / "etc-resolv.conf").symlink_to(tmp_path / "missing")
    bind = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from onemachine.node.pod_init import _bind_file\n"
        "source, target = Path(sys.argv[1], 'resolv.conf'), Path(sys.argv[1], 'etc-resolv.conf')\n"
        "_bind_file(os.open(source, os.O_PATH), target)\n"
        "print(target.is_symlink(), target.read_text(), end='')\n"
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", PYTHON, "-c", bind, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "False pod's\n", "")
    assert not (tmp_path / "missing").exists()


def test_the_container_gets_exactly_its_environment_and_working_directory(
    runtime: PodRuntime,
) -> None:
    sandbox = runtime.create("default", "env", "uid")
    report = "import json, os; print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd()}))"
    env = {"LANG": "C.UTF-8", "POD_IP": str(sandbox.address), "GREETING": "a b=c"}
    seen = json.loads(output(sandbox, python("first", report, env=env, working_dir="/srv/app")))
    assert seen == {"env": {"PATH": DEFAULT_PATH, "HOME": DEFAULT_HOME, **env}, "cwd": "/srv/app"}
    own = {"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "HOME": "/home/app"}
    seen = json.loads(output(sandbox, python("second", report, env=own)))
    assert seen == {"env": own, "cwd": "/"}


def test_each_instance_records_its_lines_with_time_and_stream_in_a_file_of_its_own(
    runtime: PodRuntime,
) -> None:
    sandbox = runtime.create("default", "logs", "uid")
    speak = (
        "import sys; print('out', flush=True); print('err', file=sys.stderr, flush=True); "
        "print('no newline', end='', flush=True)"
    )
    began = time.time_ns()
    first = sandbox.start_container(python("main", speak))
    second = sandbox.start_container(python("main", "print('again')", restart_count=1))
    assert first.wait(10) == second.wait(10) == ExitStatus(0, None)
    assert first.log_path == runtime.log_directory("default", "logs", "uid") / "main" / "0.log"
    assert second.log_path == first.log_path.with_name("1.log")
    lines = records(first.log_path)
    assert [(r.stream, r.partial, r.content) for r in lines] == [
        ("stdout", False, b"out"),
        ("stderr", False, b"err"),
        ("stdout", True, b"no newline"),
    ]
    assert all(began <= r.time <= time.time_ns() for r in lines)
    assert log_text(first.log_path) == "out\nerr\nno newline"
    assert log_text(second.log_path) == "again\n"
    sandbox.close()
    assert log_text(second.log_path) == "again\n", "the logs went with the sandbox"
    runtime.remove_logs("default", "logs", "uid")
    assert not first.log_path.parent.exists()


def test_an_exit_code_is_reported(runtime: PodRuntime) -> None:
    sandbox = runtime.create("default", "exits", "uid")
    container = sandbox.start_container(python("main", "import sys; sys.exit(7)"))
    assert container.wait(10) == ExitStatus(7, None)
    assert container.poll() == ExitStatus(7, None)
    assert container.stop(5) == ExitStatus(7, None)


def test_a_pid_1_without_a_sigterm_handler_is_not_stopped_by_sigterm(
    runtime: PodRuntime,
) -> None:
    container = started(runtime.create("default", "pid1", "uid"), python("main", NO_HANDLER))
    os.kill(container.pid, signal.SIGTERM)
    assert container.wait(0.3) is None


@pytest.mark.parametrize("code", [NO_HANDLER, IGNORES], ids=["no handler", "SIG_IGN"])
def test_without_a_handler_the_container_is_killed_at_the_end_of_the_grace(
    runtime: PodRuntime, code: str
) -> None:
    container = started(runtime.create("default", "stubborn", "uid"), python("main", code))
    began = time.monotonic()
    assert container.stop(0.5) == ExitStatus(137, signal.SIGKILL)
    assert time.monotonic() - began >= 0.5, "killed before its grace was out"


def test_with_a_handler_the_container_gets_sigterm_and_ends_early(runtime: PodRuntime) -> None:
    """Ended by its own handler (exit 0): had it waited out the grace, it would be killed."""
    container = started(runtime.create("default", "polite", "uid"), python("main", HANDLES))
    status = container.stop(60)
    log = log_text(container.log_path)
    assert status == ExitStatus(0, None), f"{status}; the container's log:\n{log}"
    assert "got SIGTERM" in log, f"the container's log:\n{log}"


def test_a_container_that_forks_is_killed_whole(runtime: PodRuntime) -> None:
    container = started(runtime.create("default", "forks", "uid"), python("main", FORKS))
    members = wait_until(
        lambda: namespace_members(container.pid, "pid"),
        "the container's 5 processes",  # python, sleep, sh, 2 sleeps
        matching=satisfying(lambda members: len(members) >= 5, "5 processes"),
        poll=0.01,
    )
    assert container.stop(0.2) == ExitStatus(137, signal.SIGKILL)
    assert not any(Path(f"/proc/{pid}").exists() for pid in members)


def open_descriptors() -> set[tuple[str, str]]:
    """This process's open descriptors, each with what it refers to."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own, closed by now
            found.add((fd, os.readlink(f"/proc/self/fd/{fd}")))
    return found


def test_closing_a_sandbox_leaves_no_process_and_releases_its_address(
    tmp_path: Path, runtime: PodRuntime, pool: AddressPool
) -> None:
    descriptors = open_descriptors()
    sandbox = runtime.create("default", "whole", "uid")
    started(sandbox, python("forks", FORKS))
    started(sandbox, python("polite", HANDLES))
    sandbox.start_container(python("quick", "pass")).wait(10)
    members = namespace_members(sandbox.holder_pid, "net")
    assert len(members) >= 8  # the holder, each container's entry, command and children
    sandbox.close(grace_seconds=0.2)
    assert not any(Path(f"/proc/{pid}").exists() for pid in members)
    assert not sandbox.directory.exists()
    assert pool.in_use == frozenset()
    # None of the pod's left open. Another test's descriptor the collector closes meanwhile
    # may go (seen once in CI), so: nothing open now that was not open before, by what it is.
    assert open_descriptors() - descriptors == set()
    sandbox.close()  # again: no harm
    with pytest.raises(ContainerStartError, match="pod sandbox whole is closed"):
        sandbox.start_container(python("late", "pass"))


def test_the_runtimes_close_ends_every_sandbox(runtime: PodRuntime, pool: AddressPool) -> None:
    sandboxes = [runtime.create("default", f"pod-{n}", "uid") for n in range(3)]
    holders = [sandbox.holder_pid for sandbox in sandboxes]
    for sandbox in sandboxes:
        started(sandbox, python("main", NO_HANDLER))
    runtime.close()
    assert not any(Path(f"/proc/{pid}").exists() for pid in holders)
    assert pool.in_use == frozenset()


def test_a_sandbox_lets_go_of_its_ended_containers(runtime: PodRuntime) -> None:
    """An exec probe every second starts a container each time: a sandbox that kept them
    all would grow for the pod's whole life."""
    sandbox = runtime.create("default", "probed", "uid")
    probe = sandbox.start_container(python("main-probe", "pass"))
    assert probe.wait(10) == ExitStatus(0, None)
    kept = weakref.ref(probe)
    del probe
    assert output(sandbox, python("main", "print('next')")) == "next\n"
    gc.collect()
    assert kept() is None, "the sandbox still holds a container that ended"


def test_a_command_that_is_not_in_the_pod_is_refused(runtime: PodRuntime) -> None:
    sandbox = runtime.create("default", "missing", "uid")
    not_found = r'exec: "{}": executable file not found in {}'
    with pytest.raises(ContainerStartError, match=not_found.format("no-such-cmd", r"\$PATH")):
        sandbox.start_container(ContainerLaunch("main", ["no-such-cmd"], {}))
    with pytest.raises(ContainerStartError, match=not_found.format("/opt/none/bin/x", "the pod")):
        sandbox.start_container(ContainerLaunch("main", ["/opt/none/bin/x"], {}))
    with pytest.raises(ContainerStartError, match="the container has no command"):
        sandbox.start_container(ContainerLaunch("main", [], {}))


def test_a_machine_that_refuses_namespaces_gets_the_refusal_not_a_pod(
    tmp_path: Path, fresh_namespace: int
) -> None:
    """Without CAP_SYS_ADMIN (setpriv drops it), as on a machine that allows no namespaces;
    the node's pod network opened in a fresh namespace (nsenter), never the host's."""
    attempt = (
        "import sys\n"
        "from pathlib import Path\n"
        "from onemachine.netns import NamespaceUnavailable\n"
        "from onemachine.node.pod_network import PodNetwork\n"
        "from onemachine.node.pod_runtime import PodRuntime\n"
        "try:\n"
        f"    PodRuntime(Path('{tmp_path}'), PodNetwork.open()).create('a', 'b', 'c')\n"
        "except NamespaceUnavailable as refused:\n"
        "    sys.exit(str(refused))\n"
    )
    refused = subprocess.run(
        [
            "nsenter",
            f"--net=/proc/self/fd/{fresh_namespace}",
            "setpriv",
            "--bounding-set=-sys_admin",
            PYTHON,
            "-c",
            attempt,
        ],
        capture_output=True,
        text=True,
        check=False,
        pass_fds=(fresh_namespace,),
    )
    assert refused.returncode == 1
    assert refused.stderr == (
        "this machine does not allow network, UTS, mount and PID namespaces: "
        "unshare(CLONE_NEWNET|CLONE_NEWUTS|CLONE_NEWNS|CLONE_NEWPID) failed: "
        "Operation not permitted\n"
    )
    assert list(tmp_path.glob("pods/*")) == []


def test_a_pod_directory_overlayfs_cannot_name_fails_the_sandbox_with_the_reason(
    tmp_path: Path, network: PodNetwork, pool: AddressPool
) -> None:
    pods = PodRuntime(tmp_path / "node,1", network)
    with pytest.raises(SandboxError) as refused:
        pods.create("default", "comma", "uid")
    assert str(refused.value) == (
        f"the pod's sandbox could not be made: the pod's directory {tmp_path}/node,1/pods/"
        "default_comma_uid holds one of , : \\, which overlayfs options cannot carry: give "
        "the node a --root without them"
    )
    assert list((tmp_path / "node,1" / "pods").iterdir()) == []
    assert pool.in_use == frozenset()


def test_with_no_address_left_the_sandbox_is_refused_and_undone(
    tmp_path: Path, node_netns: int
) -> None:
    pool = AddressPool(IPv4Network("198.18.0.0/30"))  # one pod address: .2
    pods = PodRuntime(tmp_path / "node", PodNetwork.open(pool))
    first = pods.create("default", "first", "uid")
    with pytest.raises(AddressesExhausted):
        pods.create("default", "second", "uid")
    assert [path.name for path in (tmp_path / "node" / "pods").iterdir()] == [first.directory.name]
    pods.close()
    assert pool.in_use == frozenset()


_IN_A_CONTAINER = """
import sys
from pathlib import Path
from onemachine.node.pod_network import PodNetwork
from onemachine.node.container_logs import log_text
from onemachine.node.pod_runtime import ContainerLaunch, PodRuntime
root, outside = Path(sys.argv[1]), sys.argv[2]
pods = PodRuntime(root, PodNetwork.open())
sandbox = pods.create("default", "nested", "uid")
write = (
    f"open('{outside}', 'w').write('planted'); print(open('{outside}').read()); "
    "print(open('/etc/hosts').read().splitlines()[-1])"
)
container = sandbox.start_container(ContainerLaunch("main", [sys.executable, "-c", write], {}))
print(container.wait(10), log_text(container.log_path).strip())
print(list((sandbox.directory / "upper").iterdir()))
pods.close()
"""


def test_a_node_inside_a_container_keeps_the_pods_writes_on_its_own_tmpfs(
    tmp_path: Path, fresh_namespace: int
) -> None:
    """As inside a container: the node's files are an overlay, where the kernel takes no
    upper layer, so the pod's writes stay in memory, off the machine's files all the same;
    and /etc/hosts is a file bound over the image's, over which the pod still gets its own
    (written by the node in the pod's directory, which the tmpfs hides from the pod). The
    node runs in a mount namespace of its own here (`unshare -m`) with both."""
    layers = {name: tmp_path / name for name in ("lower", "upper", "work", "merged")}
    for layer in layers.values():
        layer.mkdir()
    (tmp_path / "hosts").write_text("198.18.0.1 node")
    mount = (
        "mount -t overlay overlay -o lowerdir={lower},upperdir={upper},workdir={work} {merged}"
        f" && mount --bind {tmp_path}/hosts /etc/hosts"
    ).format(**layers)
    outside = f"/outside-{uuid.uuid4().hex}"
    node = subprocess.run(
        [
            "unshare",
            "--mount",
            "--net",
            "--propagation",
            "private",
            "sh",
            "-c",
            f'{mount} && exec "$0" -c "$1" "$2" "$3"',
            PYTHON,
            _IN_A_CONTAINER,
            str(layers["merged"]),
            outside,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert node.returncode == 0, node.stderr
    assert node.stdout == ("ExitStatus(exit_code=0, signal=None) planted\n198.18.0.2\tnested\n[]\n")
    assert not Path(outside).exists()
    assert (tmp_path / "hosts").read_text() == "198.18.0.1 node"


def test_a_working_directory_that_cannot_be_made_is_refused(runtime: PodRuntime) -> None:
    sandbox = runtime.create("default", "workdir", "uid")
    output(sandbox, python("first", "open('/srv-file', 'w').write('not a directory')"))
    refused = "working directory '/srv-file/app': Not a directory"
    with pytest.raises(ContainerStartError, match=refused):
        sandbox.start_container(python("second", "pass", working_dir="/srv-file/app"))


_NODE = """
import sys, time
from pathlib import Path
from onemachine.node.pod_network import PodNetwork
from onemachine.node.pod_runtime import ContainerLaunch, PodRuntime
pods = PodRuntime(Path(sys.argv[1]), PodNetwork.open())
sandbox = pods.create("default", "orphan", "uid")
container = sandbox.start_container(ContainerLaunch("main", ["sleep", "60"], {}))
print(sandbox.holder_pid, container.pid, flush=True)
time.sleep(60)
"""


def test_a_node_killed_without_closing_its_pods_takes_them_along(
    tmp_path: Path, fresh_namespace: int
) -> None:
    node = subprocess.Popen(
        ["unshare", "--net", PYTHON, "-c", _NODE, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    pids = [int(pid) for pid in node.stdout.readline().split()]
    assert len(pids) == 2 and all(Path(f"/proc/{pid}").exists() for pid in pids)
    node.kill()
    node.wait()
    node.stdout.close()
    wait_until(
        lambda: [pid for pid in pids if Path(f"/proc/{pid}").exists()] == [],
        f"the pod's processes {pids} to end with their node",
        poll=0.01,
    )


TINY_SERVER = """\
import os, socketserver
class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(b"served from " + __file__.encode())
socketserver.TCPServer(("", int(os.environ["PORT"])), Handler).serve_forever()
"""


@pytest.mark.slow
def test_a_venvs_python_runs_its_editable_install_from_a_checkout_under_root(
    runtime: PodRuntime,
) -> None:
    """The MCP image's case: a venv under /tmp whose package is an editable install of a
    checkout under /root (a .pth naming its source tree, as `pip install -e` writes for a
    src layout). The venv, its base interpreter and the source tree are bound read-only;
    nothing else of /root or /tmp shows."""
    checkout = Path(tempfile.mkdtemp(prefix="lc-checkout-", dir="/root"))
    venv_parent = Path(tempfile.mkdtemp(prefix="lc-state-", dir="/tmp"))
    try:
        (venv_parent / "secret").write_text("not for pods")
        package = checkout / "src" / "tinyserver"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "__main__.py").write_text(TINY_SERVER)
        venv = venv_parent / "venv"
        subprocess.run(
            [sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True
        )
        (site,) = venv.glob("lib/python*/site-packages")
        (site / "__editable__.tinyserver-0.1.pth").write_text(f"{checkout / 'src'}\n")
        sandbox = runtime.create("default", "venv", "uid")
        env = {"PORT": "8000"}
        server = ContainerLaunch("main", [str(venv / "bin/python"), "-m", "tinyserver"], env)
        sandbox.start_container(server)

        def answer() -> bytes:
            try:
                with socket.create_connection((str(sandbox.address), 8000), timeout=2) as c:
                    return c.recv(200)
            except OSError:
                return b""

        served = wait_until(answer, "the venv's server to answer")
        assert served == f"served from {package / '__main__.py'}".encode()
        shown = f"ls -A {venv_parent}; echo --; ls -A {checkout}"
        assert output(sandbox, ContainerLaunch("list", ["/bin/sh", "-c", shown], {})) == (
            "venv\n--\nsrc\n"  # the venv, not its state directory's secret; the source tree
        )
    finally:
        shutil.rmtree(checkout)
        shutil.rmtree(venv_parent)


@pytest.mark.parametrize(
    "annotations",
    [("", ""), (": dict[str, str]", ": dict[str, list[str]]")],
    ids=["older setuptools", "setuptools of today"],
)
def test_a_venvs_python_brings_the_source_trees_of_setuptools_editable_finders(
    annotations: tuple[str, str],
) -> None:
    """The other form `pip install -e` takes with setuptools: a .pth that imports a finder
    module whose MAPPING and NAMESPACES name the source directories (setuptools'
    editable_wheel.py, _FINDER_TEMPLATE; annotated assignments in the setuptools of today,
    as pip installed it here); those under /root are bound, the venv is, and a path outside
    the private directories is not (the overlay shows it anyway)."""
    checkout = Path(tempfile.mkdtemp(prefix="lc-checkout-", dir="/root"))
    venv_parent = Path(tempfile.mkdtemp(prefix="lc-state-", dir="/tmp"))
    try:
        venv = venv_parent / "venv"
        subprocess.run(
            [sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True
        )
        (site,) = venv.glob("lib/python*/site-packages")
        finder = "__editable___agentcube_sdk_0_1_finder"
        (site / "__editable__.agentcube_sdk-0.1.pth").write_text(
            f"import {finder}; {finder}.install()"
        )
        for source in ("sdk-python/agentcube", "ns"):
            (checkout / source).mkdir(parents=True)
        mapping = {"agentcube": f"{checkout}/sdk-python/agentcube", "elsewhere": "/usr/lib"}
        namespaces = {"agentcube_ns": [f"{checkout}/ns"], "gone": [f"{checkout}/gone"]}
        (site / f"{finder}.py").write_text(
            f"import sys\nMAPPING{annotations[0]} = {mapping!r}\n"
            f"NAMESPACES{annotations[1]} = {namespaces!r}\n"
        )
        bound = _machines_own(venv / "bin" / "python")
        assert str(venv) in bound and str(venv_parent) not in bound
        assert {f"{checkout}/sdk-python/agentcube", f"{checkout}/ns"} <= set(bound)
        assert not [path for path in bound if path.startswith(("/usr", f"{checkout}/gone"))]
        assert str(checkout) not in bound  # the trees alone, not the whole checkout
    finally:
        shutil.rmtree(checkout)
        shutil.rmtree(venv_parent)
