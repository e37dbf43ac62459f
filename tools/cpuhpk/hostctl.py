"""The host's half of physical CPU hot-add and hot-remove (make run TOPOLOGY=hotplug).

The guest boots with fewer CPUs present than possible (QEMU -smp N,maxcpus=M).
When a case of the user-space suite wants a CPU plugged in or pulled out it
asks on its second serial port (ttyS1, a QEMU socket chardev this process
serves) and waits, with a timeout, for the answer; this process does it
through QEMU's QMP socket, as an operator (or a cloud's control plane) would:

    guest -> host   add             plug the next absent CPU in (device_add)
    host  -> guest  ok <id>         accepted; ACPI now tells the guest
    guest -> host   del             unplug the CPU added last (device_del)
    host  -> guest  ok <id>         accepted; ACPI asks the guest to eject it
                                    (no add after it: QEMU 7.2's TCG aborts)
    host  -> guest  err <message>   refused, with QMP's reason

Every line both ways and every QMP exchange go to hostctl.log in the run's
output directory. The control never blocks the run: when QEMU does not come
up (a build that fails) the thread just ends with the run.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, TextIO, Tuple

# The guest's kernel argument that says a host control is there, and on which port.
KERNEL_ARG = 'cpuhpk_hostctl=ttyS1'
# Seconds between looks for QEMU's sockets while kunit.py builds and boots.
POLL = 0.2
# Seconds QMP gets to answer one command.
QMP_TIMEOUT = 30.0


class QmpError(Exception):
    """QMP refused a command or did not answer."""


class Qmp:
    """A QMP client: one command at a time, events skipped (but logged)."""

    def __init__(self, sock: socket.socket, log: TextIO) -> None:
        self._sock, self._log = sock, log
        self._file = sock.makefile('rw', encoding='utf-8', newline='\n')
        self._sock.settimeout(QMP_TIMEOUT)
        self._reply()                       # the greeting
        self.execute('qmp_capabilities')

    def _reply(self) -> Dict[str, Any]:
        while True:
            line = self._file.readline()
            if not line:
                raise QmpError('QMP closed the connection')
            self._log.write(f'qmp <- {line.rstrip()}\n')
            msg = json.loads(line)
            if isinstance(msg, dict) and 'event' not in msg:
                return msg

    def execute(self, command: str, arguments: Optional[Dict[str, Any]] = None) -> Any:
        req: Dict[str, Any] = {'execute': command}
        if arguments:
            req['arguments'] = arguments
        text = json.dumps(req)
        self._log.write(f'qmp -> {text}\n')
        self._file.write(text + '\n')
        self._file.flush()
        try:
            reply = self._reply()
        except (OSError, ValueError) as e:
            raise QmpError(f'{command}: {e}') from None
        if 'error' in reply:
            err = reply['error']
            raise QmpError(f'{command}: {err.get("desc", err)}')
        return reply.get('return')


def absent_cpus(hotpluggable: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The entries of query-hotpluggable-cpus with no CPU plugged in, in order."""
    return [c for c in hotpluggable if 'qom-path' not in c]


def slot(cpu: Dict[str, Any]) -> Tuple[int, ...]:
    """The socket, die, core, thread ids of @cpu (query-hotpluggable-cpus)."""
    keys = ('socket-id', 'die-id', 'core-id', 'thread-id')
    return tuple(int(cpu.get('props', {}).get(k, 0)) for k in keys)


def lowest(cpus: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The CPU of @cpus in the lowest slot (QEMU lists them highest first)."""
    return min(cpus, key=slot)


def device_add_args(cpu: Dict[str, Any], dev_id: str) -> Dict[str, Any]:
    """device_add's arguments for the absent CPU @cpu (query-hotpluggable-cpus)."""
    return {'driver': cpu['type'], 'id': dev_id, **cpu.get('props', {})}


class Host:
    """What the guest may ask for, done through QMP; answers one line each."""

    def __init__(self, qmp: Qmp) -> None:
        self.qmp = qmp
        self.added: List[str] = []
        self.count = 0          # device ids are never reused
        # QEMU 7.2 under multi-threaded TCG aborts (SIGABRT, nothing on
        # stderr) at the first plug after an unplug, whatever the slot:
        # refused here instead, with the reason.
        self.deleted = False

    def handle(self, request: str) -> str:
        words = request.split()
        try:
            if words == ['add']:
                if self.deleted:
                    return ('err no plug after an unplug: QEMU 7.2 under TCG aborts on it '
                            '(SIGABRT; single-threaded TCG already at the unplug)')
                free = absent_cpus(self.qmp.execute('query-hotpluggable-cpus') or [])
                if not free:
                    return 'err no absent CPU left (QEMU -smp maxcpus=)'
                dev_id = f'cpuhpk-cpu{self.count}'
                self.count += 1
                cpu = lowest(free)
                self.qmp.execute('device_add', device_add_args(cpu, dev_id))
                self.added.append(dev_id)
                return f'ok {dev_id}'
            if words == ['del']:
                if not self.added:
                    return 'err nothing added to delete'
                dev_id = self.added.pop()
                self.deleted = True
                self.qmp.execute('device_del', {'id': dev_id})
                return f'ok {dev_id}'
        except QmpError as e:
            return f'err {e}'
        return f'err unknown request {request!r}'


class Control:
    """Serve the guest's requests of one run from a thread (start(), stop())."""

    def __init__(self, where: Path, log_path: Path) -> None:
        self.qmp_path = where / 'qmp.sock'
        self.chan_path = where / 'hostctl.sock'
        self.log_path = log_path
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def qemu_args(self) -> str:
        """What QEMU's command line needs (one --qemu_args string, split on spaces)."""
        return (f'-qmp unix:{self.qmp_path},server=on,wait=off '
                f'-chardev socket,id=cpuhpk,path={self.chan_path},server=on,wait=off '
                '-serial chardev:cpuhpk')

    def start(self) -> None:
        for p in (self.qmp_path, self.chan_path):
            p.unlink(missing_ok=True)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(QMP_TIMEOUT)

    def _connect(self, path: Path) -> Optional[socket.socket]:
        """Connect to QEMU's socket @path once it is there; None when stopped first."""
        while not self._stop.is_set():
            if path.exists():
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(str(path))
                    return s
                except OSError:
                    s.close()
            self._stop.wait(POLL)
        return None

    def _serve(self) -> None:
        with open(self.log_path, 'w', buffering=1) as log:
            chan = self._connect(self.chan_path)
            qsock = self._connect(self.qmp_path) if chan else None
            if chan is None or qsock is None:
                log.write('QEMU never opened its sockets\n')
                return
            with chan, qsock:
                try:
                    host = Host(Qmp(qsock, log))
                except (OSError, ValueError, QmpError) as e:
                    log.write(f'no QMP: {e}\n')
                    host = None
                chan.settimeout(POLL)
                buf = b''
                while not self._stop.is_set():
                    try:
                        data = chan.recv(4096)
                    except socket.timeout:
                        continue
                    except OSError:
                        break
                    if not data:
                        break
                    buf += data
                    while b'\n' in buf:
                        raw, buf = buf.split(b'\n', 1)
                        request = raw.decode('ascii', 'replace').strip('\r\x00 ')
                        if not request:
                            continue
                        log.write(f'guest -> {request}\n')
                        answer = host.handle(request) if host else 'err no QMP'
                        log.write(f'guest <- {answer}\n')
                        try:
                            chan.sendall(answer.encode() + b'\n')
                        except OSError as e:
                            log.write(f'guest gone: {e}\n')
                            return
