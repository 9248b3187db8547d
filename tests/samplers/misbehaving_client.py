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
  verify-*              claims VERIFY (capability bit 8) and answers every VERIFY wrongly, one way each:
    verify-short          a VERIFIED one i32 short
    verify-count          a VERIFIED of the right size whose request count is wrong
    verify-accepted       accepted length g + 1 for every trial
    verify-token          token `vocab` as the emitted token of every trial
    verify-wrong-type     TOKENS in answer to VERIFY
    verify-error          ERROR (code 3, "verifier exploded")
    verify-hang           never answers a VERIFY
    verify-exit           exits at the first VERIFY
  no-verify             a correct HELLO without the VERIFY bit (cannot be a verifier)
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
    hello(capabilities=2 if mode == "wrapping-count" else 8 if mode.startswith("verify-") else 0)
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
        if msg_type == 10:
            verify(mode, payload)
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


def verify(mode, payload):
    """Reads the shape of a VERIFY (docs/process-protocol.md) and answers it the way `mode` says."""
    (count,) = struct.unpack_from("<Q", payload, 0)
    at, shapes = 8, []
    for _ in range(count):
        vocab, g, form = struct.unpack_from("<QII", payload, at)
        trials, n_uniforms = struct.unpack_from("<QI", payload, at + 16 + 96)
        at += 16 + 96 + 12 + 4 * trials * g + 8 * n_uniforms + 4 * (g + 1) * vocab + (0 if form == 2 else 4 * g * vocab)
        shapes.append((vocab, g, trials))
    if mode == "verify-hang":
        time.sleep(3600)
    if mode == "verify-exit":
        os._exit(3)
    if mode == "verify-error":
        send(8, struct.pack("<I", 3) + string("verifier exploded"))
        return
    if mode == "verify-wrong-type":
        send(3, struct.pack("<Q", 0))
        return
    out = [struct.pack("<Q", count + (1 if mode == "verify-count" else 0))]
    for vocab, g, trials in shapes:
        out.append(struct.pack("<Q", trials))
        for _ in range(trials):
            accepted = g + 1 if mode == "verify-accepted" else 0
            first = vocab if mode == "verify-token" else 0
            out.append(struct.pack("<i%di" % (g + 1), accepted, first, *([-1] * g)))
    data = b"".join(out)
    if mode == "verify-short":
        data = data[:-4]
    send(11, data)


if __name__ == "__main__":
    sys.exit(main())
