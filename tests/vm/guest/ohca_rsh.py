#!/usr/bin/env python3
"""ohca_rsh: the remote-shell agent mpirun starts its daemons with, inside
the VMs' own network (no ssh in the image, nothing outside the VMs).

    ohca_rsh.py serve PORT            (each VM: runs commands it is sent)
    ohca_rsh.py [-x ...] HOST CMD...  (mpirun's plm_rsh_agent: runs CMD on
                                       HOST, its output here, its exit code)

A command is one line (the words joined by spaces, as ssh does), run with
bash -c; its standard output and error come back on the connection, then
one byte 0xff and the exit code. The peers are the test's own VMs on the
test's private wire; the agent serves whoever connects, which is why it
only ever runs inside those VMs, for the length of one job."""

import os
import socket
import subprocess
import sys
import threading

PORT = int(os.environ.get("OHCA_RSH_PORT", "2222"))
END = b"\xff"


def serve_one(conn):
    with conn:
        f = conn.makefile("rb")
        line = f.readline().decode().rstrip("\n")
        proc = subprocess.Popen(["bash", "-c", line], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            for chunk in iter(lambda: proc.stdout.read1(65536), b""):
                conn.sendall(chunk.replace(END, b"?"))
        except OSError:
            pass
        rc = proc.wait()
        try:
            conn.sendall(END + str(rc & 0xFF).encode() + b"\n")
        except OSError:
            pass


def serve(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", port))
    s.listen(16)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


def run(host, words):
    s = socket.create_connection((host, PORT), timeout=30)
    s.settimeout(None)
    s.sendall((" ".join(words) + "\n").encode())
    tail = b""
    while True:
        data = s.recv(65536)
        if not data:
            sys.stderr.write(f"ohca_rsh: {host} closed the connection without an exit code\n")
            return 255
        if END in tail + data:
            out, _, tail = (tail + data).partition(END)
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
            while not tail.endswith(b"\n"):
                more = s.recv(16)
                if not more:
                    break
                tail += more
            return int(tail.strip() or b"255")
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


def main(argv):
    if len(argv) == 3 and argv[1] == "serve":
        serve(int(argv[2]))
        return 0
    args = argv[1:]
    while args and args[0].startswith("-"):  # ssh options mpirun may add (-x)
        args = args[1:]
    if len(args) < 2:
        sys.stderr.write("usage: ohca_rsh.py serve PORT | ohca_rsh.py HOST COMMAND...\n")
        return 2
    return run(args[0], args[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
