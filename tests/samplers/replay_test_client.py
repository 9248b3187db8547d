"""A replay source over the process protocol for tests/samplers/replay_source_test.cpp (standard library only):
top-k at T (ties kept) renormalized, with the label guard, through samplecheck.serve; or a client that breaks
LOGPROBS_BATCH on purpose. Usage: replay_test_client.py ok|no-labels|sample-only|short|guard-2"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import samplecheck  # noqa: E402
from topk_replay import top_k_logprobs  # noqa: E402
from samplecheck import protocol as P  # noqa: E402


def logprobs(logits, params):
    labels = params.host("label") if hasattr(params, "label") else [-1] * len(params)
    rows = [top_k_logprobs(list(r), p, lab) for r, p, lab in zip(logits, params, labels)]
    return [r for r, _ in rows], [g for _, g in rows]


def broken(mode):
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        msg_type, payload = P.read_frame(stdin)
        if msg_type is None or msg_type == P.BYE:
            return 0
        if msg_type == P.HELLO:
            answer = P.encode_hello_answer(P.CAP_LOGPROBS_BATCH, "broken-" + mode, "vllm")
        else:
            rows, vocab, _, _, _, _ = P.decode_logprobs_batch(payload)
            values = P._f32([0.0] * (rows * vocab - (1 if mode == "short" else 0)))
            answer = P.encode_logprobs(rows, vocab, [0] * rows, values)
            if mode == "guard-2":
                answer = answer[:24] + bytes([2]) + answer[25:]
        stdout.write(answer)
        stdout.flush()


mode = sys.argv[1]
if mode in ("short", "guard-2"):
    sys.exit(broken(mode))
if mode == "sample-only":
    sys.exit(samplecheck.serve(lambda logits, params: [0] * len(logits), tensors="python"))
sys.exit(samplecheck.serve(logprobs=logprobs, labels=(mode == "ok"), name="replay-" + mode, profile="vllm",
                           tensors="python"))
