"""A replay source over the process protocol for tests/campaign/replay_cli_test.sh (standard library only): top-k at T
(ties kept) renormalized with the label guard, the replay of a top-k-only suite, through samplecheck.serve; each
start appended to a file; or a client that is slow, fails with a huge message, or never answers its HELLO.
Usage: replay_process_client.py MODE STARTS_FILE [PROFILE]
  ok          serve (HELLO profile PROFILE, default none)
  slow<N>     serve; the N-th LOGPROBS_BATCH (default 2) sleeps 600 s (the test stops samplecheck meanwhile);
              STARTS_FILE.busy is written when it starts sleeping
  huge-error  HELLO, then every LOGPROBS_BATCH answered with an ERROR of a 20 MB message; serving goes on
  huge-exit   HELLO, then at the first LOGPROBS_BATCH 20 MB on stderr and exit 3
  huge-refuse the HELLO answered with an ERROR of a 20 MB message (cannot serve)
  mute        never answers the HELLO (a stuck handshake)"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import samplecheck  # noqa: E402
from topk_replay import top_k_logprobs  # noqa: E402
from samplecheck import protocol as P  # noqa: E402

HUGE = 20 << 20


calls = []


def logprobs(logits, params):
    calls.append(len(params))
    if mode.startswith("slow") and len(calls) == int(mode[4:] or 2):
        with open(starts + ".busy", "w") as f:
            f.write("busy\n")
        time.sleep(600)
    labels = params.host("label") if hasattr(params, "label") else [-1] * len(params)
    rows = [top_k_logprobs(list(r), p, lab) for r, p, lab in zip(logits, params, labels)]
    return [r for r, _ in rows], [g for _, g in rows]


def misbehave():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        msg_type, _ = P.read_frame(stdin)
        if msg_type is None or msg_type == P.BYE:
            return 0
        if mode == "mute":
            time.sleep(600)
        if msg_type == P.HELLO and mode == "huge-refuse":
            answer = P.encode_error(P.ERR_FAILED, "no model: " + "m" * HUGE)
        elif msg_type == P.HELLO:
            answer = P.encode_hello_answer(P.CAP_LOGPROBS_BATCH, "huge", "vllm")
        elif mode == "huge-exit":
            sys.stderr.write("dying: " + "e" * HUGE + "\nlast words\n")
            sys.stderr.flush()
            return 3
        else:
            answer = P.encode_error(P.ERR_FAILED, "out of memory: " + "x" * HUGE + " (end)")
        stdout.write(answer)
        stdout.flush()


mode, starts = sys.argv[1], sys.argv[2]
with open(starts, "a") as f:
    f.write("start %d\n" % os.getpid())
if mode in ("huge-error", "huge-exit", "huge-refuse", "mute"):
    sys.exit(misbehave())
sys.exit(samplecheck.serve(logprobs=logprobs, labels=True, name="replay-" + mode,
                           profile=sys.argv[3] if len(sys.argv) > 3 else "", tensors="python"))
