"""The process samplecheck starts for check(): it joins its stdin and stdout to the Unix socket of the Python process
that serves the sampler (samplecheck.check serves it in a thread, so the callable keeps its state: a model, a CUDA
context). Standard library only; run as a script: python3 _relay.py <socket path>."""
import os
import socket
import sys
import threading


def _upstream(sock):
    while True:
        data = os.read(0, 1 << 20)
        if not data:
            sock.shutdown(socket.SHUT_WR)
            return
        sock.sendall(data)


def main(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as e:
        print("samplecheck relay: cannot reach the serving Python process at %s: %s" % (path, e), file=sys.stderr)
        return 1
    threading.Thread(target=_upstream, args=(sock,), daemon=True).start()
    while True:
        data = sock.recv(1 << 20)
        if not data:
            return 0
        view = memoryview(data)
        while view:
            view = view[os.write(1, view):]


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    os._exit(code)
