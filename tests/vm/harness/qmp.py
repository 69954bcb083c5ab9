"""A minimal QMP client (QEMU's machine protocol) on a VM's socket."""

import json
import socket

from .common import HarnessError


class QMP:
    """Minimal QMP client: one connection per command."""

    def __init__(self, path):
        self.path = path

    def _recv(self, f):
        while True:
            line = f.readline()
            if not line:
                raise HarnessError("QMP connection closed")
            msg = json.loads(line)
            if "event" in msg:
                continue
            return msg

    def execute(self, command, timeout=10, **arguments):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.path)
            f = s.makefile("rw")
            self._recv(f)  # greeting
            f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
            f.flush()
            self._recv(f)
            req = {"execute": command}
            if arguments:
                req["arguments"] = arguments
            f.write(json.dumps(req) + "\n")
            f.flush()
            msg = self._recv(f)
            if "error" in msg:
                raise HarnessError(f"QMP {command} failed: {msg['error']}")
            return msg.get("return")
