"""tools/cpuhpk/hostctl.py: the guest's requests, QMP, the serial channel."""

from __future__ import annotations

import io
import json
import socket
import tempfile
import threading
import unittest
from pathlib import Path
from typing import Any, Dict, List

from cpuhpk import hostctl

# query-hotpluggable-cpus of QEMU 7.2 booted -smp 2,maxcpus=4 (highest first).
HOTPLUGGABLE: List[Dict[str, Any]] = [
    {'props': {'core-id': 3, 'thread-id': 0, 'socket-id': 0}, 'vcpus-count': 1,
     'type': 'qemu64-x86_64-cpu'},
    {'props': {'core-id': 2, 'thread-id': 0, 'socket-id': 0}, 'vcpus-count': 1,
     'type': 'qemu64-x86_64-cpu'},
    {'props': {'core-id': 1, 'thread-id': 0, 'socket-id': 0}, 'vcpus-count': 1,
     'qom-path': '/machine/unattached/device[2]', 'type': 'qemu64-x86_64-cpu'},
    {'props': {'core-id': 0, 'thread-id': 0, 'socket-id': 0}, 'vcpus-count': 1,
     'qom-path': '/machine/unattached/device[0]', 'type': 'qemu64-x86_64-cpu'},
]


class FakeQemu:
    """QEMU's side of a QMP socket: answers, with an event in between."""

    def __init__(self, sock: socket.socket, refuse: str = '') -> None:
        self.sock, self.refuse = sock, refuse
        self.commands: List[Dict[str, Any]] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def send(self, msg: Dict[str, Any], f: Any) -> None:
        f.write(json.dumps(msg) + '\n')
        f.flush()

    def serve(self) -> None:
        f = self.sock.makefile('rw', encoding='utf-8', newline='\n')
        self.send({'QMP': {'version': {}, 'capabilities': []}}, f)
        for line in f:
            cmd = json.loads(line)
            self.commands.append(cmd)
            self.send({'event': 'ACPI_DEVICE_OST', 'data': {}}, f)
            if cmd['execute'] == self.refuse:
                self.send({'error': {'class': 'GenericError', 'desc': 'no way'}}, f)
            elif cmd['execute'] == 'query-hotpluggable-cpus':
                self.send({'return': HOTPLUGGABLE}, f)
            else:
                self.send({'return': {}}, f)


def host(refuse: str = '') -> 'tuple[hostctl.Host, FakeQemu]':
    ours, theirs = socket.socketpair()
    qemu = FakeQemu(theirs, refuse)
    return hostctl.Host(hostctl.Qmp(ours, io.StringIO())), qemu


class HostTest(unittest.TestCase):
    def test_add_plugs_the_lowest_absent_cpu(self) -> None:
        h, qemu = host()
        self.assertEqual(h.handle('add'), 'ok cpuhpk-cpu0')
        self.assertEqual(qemu.commands[0], {'execute': 'qmp_capabilities'})
        self.assertEqual(qemu.commands[-1], {'execute': 'device_add', 'arguments': {
            'driver': 'qemu64-x86_64-cpu', 'id': 'cpuhpk-cpu0',
            'core-id': 2, 'thread-id': 0, 'socket-id': 0}})

    def test_del_pulls_the_last_added(self) -> None:
        h, qemu = host()
        self.assertEqual(h.handle('del'), 'err nothing added to delete')
        h.handle('add')
        self.assertEqual(h.handle('del'), 'ok cpuhpk-cpu0')
        self.assertEqual(qemu.commands[-1], {'execute': 'device_del',
                                             'arguments': {'id': 'cpuhpk-cpu0'}})
        self.assertEqual(h.handle('del'), 'err nothing added to delete')
        self.assertTrue(h.handle('add').startswith('err no plug after an unplug'))

    def test_device_ids_are_not_reused(self) -> None:
        h, _ = host()
        self.assertEqual([h.handle('add'), h.handle('add')], ['ok cpuhpk-cpu0', 'ok cpuhpk-cpu1'])

    def test_refusals_and_nonsense_are_answered(self) -> None:
        h, _ = host(refuse='device_add')
        self.assertEqual(h.handle('add'), 'err device_add: no way')
        self.assertEqual(h.added, [])
        self.assertEqual(h.handle('reboot'), "err unknown request 'reboot'")

    def test_no_absent_cpu(self) -> None:
        self.assertEqual(hostctl.absent_cpus(HOTPLUGGABLE[2:]), [])


class ControlTest(unittest.TestCase):
    def test_serves_the_guest_over_the_channel(self) -> None:
        """QEMU's two server sockets stood in for; a request, its answer, the log."""
        with tempfile.TemporaryDirectory() as d:
            where = Path(d)
            c = hostctl.Control(where, where / 'hostctl.log')
            self.assertIn(f'-qmp unix:{where / "qmp.sock"},server=on,wait=off', c.qemu_args())
            c.start()
            chan = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            chan.bind(str(c.chan_path))
            chan.listen(1)
            qmp = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            qmp.bind(str(c.qmp_path))
            qmp.listen(1)
            guest, _ = chan.accept()
            FakeQemu(qmp.accept()[0])
            guest.sendall(b'add\r\n')
            guest.settimeout(10)
            self.assertEqual(guest.makefile('r').readline(), 'ok cpuhpk-cpu0\n')
            c.stop()
            log = (where / 'hostctl.log').read_text()
            self.assertIn('guest -> add\n', log)
            self.assertIn('guest <- ok cpuhpk-cpu0\n', log)
            for s in (guest, chan, qmp):
                s.close()

    def test_stop_before_qemu_came_up(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            c = hostctl.Control(Path(d), Path(d) / 'hostctl.log')
            c.start()
            c.stop()
            self.assertIn('never opened', (Path(d) / 'hostctl.log').read_text())


if __name__ == '__main__':
    unittest.main()
