#!/usr/bin/env python3
"""A process-protocol client that misbehaves in the one way its first argument names (process_sampler_test.cpp).

  wrong-version         HELLO with protocol version 2
  unsolicited           a correct HELLO followed by 8 bytes nobody asked for
  exit-on-request CODE  handshake, then exit with CODE (a traceback on stderr) at the first request
  exit-after-hello      handshake, then exit at once without reading anything more
  hang-on-request       handshake, then never answer
  immortal PIDFILE      write the pid, handshake, then ignore BYE, end of input and SIGTERM forever
  short-tokens          TOKENS with one token fewer than the rows asked for
  out-of-range          token `vocab` for every row
  error                 ERROR (code 3, "kernel exploded") for every request
  wrong-type            DISTRIBUTION in answer to SAMPLE
  wrapping-count        claims COUNT; answers with counts that add up to the draws only modulo 2^64
"""
import os
import signal
import struct
import sys
import time

MAGIC = 0x4B484353


def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = sys.stdin.buffer.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_frame():
    header = read_exact(8)
    if header is None:
        return None, None
    length, msg_type = struct.unpack("<II", header)
    return msg_type, read_exact(length - 4)


def send(msg_type, payload=b""):
    sys.stdout.buffer.write(struct.pack("<II", 4 + len(payload), msg_type) + payload)
    sys.stdout.buffer.flush()


def string(text):
    return struct.pack("<I", len(text)) + text.encode()


def hello(version=1, capabilities=0):
    send(1, struct.pack("<III", MAGIC, version, capabilities) + string("misbehaving") + string("vllm"))


def main():
    mode = sys.argv[1]
    read_frame()  # the harness's HELLO
    if mode == "wrong-version":
        hello(version=2)
        return 0
    if mode == "immortal":
        with open(sys.argv[2], "w") as f:
            f.write(str(os.getpid()))
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        hello()
        while True:
            time.sleep(1)
    hello(capabilities=2 if mode == "wrapping-count" else 0)
    if mode == "unsolicited":
        sys.stdout.buffer.write(b"\0" * 8)
        sys.stdout.buffer.flush()
    if mode == "exit-after-hello":
        os._exit(0)
    while True:
        msg_type, payload = read_frame()
        if msg_type is None or msg_type == 9:
            return 0
        if mode == "exit-on-request":
            print("Traceback (most recent call last):\nRuntimeError: CUDA error: an illegal memory access",
                  file=sys.stderr, flush=True)
            return int(sys.argv[2])
        if mode == "hang-on-request":
            time.sleep(3600)
        if mode == "error":
            send(8, struct.pack("<I", 3) + string("kernel exploded"))
            continue
        if mode == "wrapping-count" and msg_type == 6:
            (vocab,) = struct.unpack_from("<Q", payload, 0)
            (draws,) = struct.unpack_from("<Q", payload, 8 + 48)
            counts = [2**64 - 1, draws + 1] + [0] * (vocab - 2)
            send(7, struct.pack("<QQ%dQ" % vocab, vocab, 0, *counts))
            continue
        rows, vocab = struct.unpack_from("<QQ", payload, 0)
        if mode == "short-tokens":
            send(3, struct.pack("<Q%di" % (rows - 1), rows, *([0] * (rows - 1))))
        elif mode == "out-of-range":
            send(3, struct.pack("<Q%di" % rows, rows, *([vocab] * rows)))
        elif mode == "wrong-type":
            send(5, struct.pack("<Q", 0))
        else:
            send(3, struct.pack("<Q%di" % rows, rows, *([0] * rows)))


if __name__ == "__main__":
    sys.exit(main())
