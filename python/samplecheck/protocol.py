"""The samplecheck process protocol (docs/process-protocol.md), version 1: constants, framing and the byte layout of
every message, both directions. Standard library only.

The client side (serve) decodes requests and encodes answers; the harness side (encode_* of requests, decode_* of
answers) is what a fake harness needs: the package's tests speak it to serve() without samplecheck.
"""
import struct
import sys
from array import array

MAGIC = 0x4B484353  # the bytes b"SCHK"
VERSION = 1
MAX_FRAME = 1 << 30

# Message types: one table, the protocol's.
HELLO, SAMPLE, TOKENS, PROCESSED, DISTRIBUTION, COUNT, HISTOGRAM, ERROR, BYE, VERIFY, VERIFIED = range(1, 12)
SAMPLE_REPLICATED = 12
LOGPROBS_BATCH, LOGPROBS = 13, 14  # the replay campaign's processed logprobs of a batch (docs/replay.md)
SAMPLE_STEPS = 15  # consecutive SAMPLE calls of one batch, call s at every offset + s (a decode loop)
MESSAGE_NAMES = {HELLO: "HELLO", SAMPLE: "SAMPLE", TOKENS: "TOKENS", PROCESSED: "PROCESSED",
                 DISTRIBUTION: "DISTRIBUTION", COUNT: "COUNT", HISTOGRAM: "HISTOGRAM", ERROR: "ERROR", BYE: "BYE",
                 VERIFY: "VERIFY", VERIFIED: "VERIFIED", SAMPLE_REPLICATED: "SAMPLE_REPLICATED",
                 LOGPROBS_BATCH: "LOGPROBS_BATCH", LOGPROBS: "LOGPROBS", SAMPLE_STEPS: "SAMPLE_STEPS"}

# Capability bits of the client's HELLO.
CAP_PROCESSED, CAP_COUNT, CAP_NONDETERMINISTIC, CAP_VERIFY, CAP_VERIFY_SCRIPTED = 1, 2, 4, 8, 16
CAP_SAMPLE_REPLICATED = 32
CAP_LOGPROBS_BATCH, CAP_LOGPROBS_LABELS = 64, 128  # answers LOGPROBS_BATCH; takes its labels (a label guard)
CAP_SAMPLE_STEPS = 256  # answers SAMPLE_STEPS (the batch sent once for many calls)
CAP_COUNT_DISTRIBUTIONAL = 512  # COUNT draws the distribution on another path, not SAMPLE's tokens at (seed, offset)

# LOGPROBS_BATCH logits dtypes: bf16 rows hold bf16 values (exact in the f32 sent).
DTYPE_FP32, DTYPE_BF16 = 0, 1

# ERROR codes.
ERR_INVALID_ARGUMENT, ERR_UNSUPPORTED, ERR_FAILED, ERR_INVALID_ROW = 1, 2, 3, 4

# VERIFY draft forms.
DRAFT_PROBABILITIES, DRAFT_LOGITS, DRAFT_ONE_HOT = 0, 1, 2
MAX_DRAFT = 16

INVALID_TOKEN = -1
PARAMS = struct.Struct("<dqddQQ")  # temperature, top_k, top_p, min_p, seed, offset: 48 bytes
_LITTLE = sys.byteorder == "little"


class ProtocolError(Exception):
    """A malformed message (a frame that cannot be read, a payload of the wrong size)."""


class SamplerError(Exception):
    """Raised by a callable (or by serve) to answer ERROR with a code (ERR_*) and a message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# ---- framing ----
def frame(msg_type, payload=b""):
    return struct.pack("<II", 4 + len(payload), msg_type) + payload


def string(text):
    data = text.encode("utf-8")
    return struct.pack("<I", len(data)) + data


def read_exact(stream, n):
    """n bytes from a binary stream into a bytearray (writable: torch.frombuffer shares it), None at end of input."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        chunk = stream.readinto(view[got:]) if hasattr(stream, "readinto") else None
        if chunk is None:  # a stream without readinto
            data = stream.read(n - got)
            chunk = len(data)
            view[got:got + chunk] = data
        if not chunk:
            return None
        got += chunk
    return buf


def read_frame(stream):
    """(type, payload) of the next frame; (None, None) at a clean end of input. ProtocolError on a bad length or a
    frame cut short."""
    header = read_exact(stream, 8)
    if header is None:
        return None, None
    length, msg_type = struct.unpack("<II", header)
    if length < 4 or length > MAX_FRAME:
        raise ProtocolError("frame length %d is outside [4, 2^30]" % length)
    payload = read_exact(stream, length - 4)
    if payload is None:
        raise ProtocolError("input ended inside a %s message" % MESSAGE_NAMES.get(msg_type, "type %d" % msg_type))
    return msg_type, payload


def floats(data):
    """f32 little-endian values as an array('f')."""
    values = array("f")
    values.frombytes(bytes(data))
    if not _LITTLE:
        values.byteswap()
    return values


def _need(payload, size, what):
    if len(payload) != size:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed %s: %d payload bytes, its header says %d" %
                           (what, len(payload), size))


# ---- the client's side: requests in, answers out ----
def decode_hello(payload):
    if len(payload) < 8:
        raise ProtocolError("HELLO of %d bytes (at least 8 expected)" % len(payload))
    magic, version = struct.unpack_from("<II", payload, 0)
    if magic != MAGIC:
        raise ProtocolError("HELLO with magic 0x%08x (expected 0x%08x, 'SCHK')" % (magic, MAGIC))
    return version


def encode_hello_answer(capabilities, name, profile):
    return frame(HELLO, struct.pack("<III", MAGIC, VERSION, capabilities) + string(name) + string(profile))


def encode_error(code, message):
    return frame(ERROR, struct.pack("<I", code) + string(message))


def decode_params(payload, at, count):
    return [PARAMS.unpack_from(payload, at + i * PARAMS.size) for i in range(count)]


def decode_sample(payload):
    """SAMPLE: (rows, vocab, [param tuples], logits memoryview of rows x vocab f32)."""
    if len(payload) < 16:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed SAMPLE: %d payload bytes" % len(payload))
    rows, vocab = struct.unpack_from("<QQ", payload, 0)
    at = 16 + rows * PARAMS.size
    _need(payload, at + 4 * rows * vocab, "SAMPLE of %d rows x %d tokens" % (rows, vocab))
    return rows, vocab, decode_params(payload, 16, rows), memoryview(payload)[at:]


def decode_sample_replicated(payload):
    """SAMPLE_REPLICATED: (rows, vocab, replicas, [replicas x rows param tuples], logits of rows x vocab f32). Call
    row k * rows + r is logits row r with params[k * rows + r]."""
    if len(payload) < 24:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed SAMPLE_REPLICATED: %d payload bytes" % len(payload))
    rows, vocab, replicas = struct.unpack_from("<QQQ", payload, 0)
    calls = rows * replicas
    at = 24 + calls * PARAMS.size
    _need(payload, at + 4 * rows * vocab,
          "SAMPLE_REPLICATED of %d rows x %d tokens x %d replicas" % (rows, vocab, replicas))
    return rows, vocab, replicas, decode_params(payload, 24, calls), memoryview(payload)[at:]


def decode_sample_steps(payload):
    """SAMPLE_STEPS: (rows, vocab, steps, [rows param tuples of step 0], logits of rows x vocab f32). Step s is the
    SAMPLE of the rows with every offset + s; the answer is TOKENS of steps x rows tokens, step by step."""
    if len(payload) < 24:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed SAMPLE_STEPS: %d payload bytes" % len(payload))
    rows, vocab, steps = struct.unpack_from("<QQQ", payload, 0)
    if steps < 1:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed SAMPLE_STEPS: %d steps (at least 1)" % steps)
    at = 24 + rows * PARAMS.size
    _need(payload, at + 4 * rows * vocab, "SAMPLE_STEPS of %d rows x %d tokens" % (rows, vocab))
    return rows, vocab, steps, decode_params(payload, 24, rows), memoryview(payload)[at:]


def decode_processed(payload):
    """PROCESSED: (vocab, param tuple, logits memoryview)."""
    if len(payload) < 8 + PARAMS.size:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed PROCESSED: %d payload bytes" % len(payload))
    (vocab,) = struct.unpack_from("<Q", payload, 0)
    _need(payload, 8 + PARAMS.size + 4 * vocab, "PROCESSED of %d tokens" % vocab)
    return vocab, PARAMS.unpack_from(payload, 8), memoryview(payload)[8 + PARAMS.size:]


def decode_logprobs_batch(payload):
    """LOGPROBS_BATCH: (rows, vocab, dtype, [param tuples], labels (a list, or None without the labels flag), logits
    memoryview of rows x vocab f32)."""
    if len(payload) < 24:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed LOGPROBS_BATCH: %d payload bytes" % len(payload))
    rows, vocab, dtype, flags = struct.unpack_from("<QQII", payload, 0)
    if dtype not in (DTYPE_FP32, DTYPE_BF16) or flags & ~1:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed LOGPROBS_BATCH: dtype %d, flags %d" % (dtype, flags))
    at = 24 + rows * PARAMS.size
    _need(payload, at + 4 * rows * (flags & 1) + 4 * rows * vocab,
          "LOGPROBS_BATCH of %d rows x %d tokens%s" % (rows, vocab, " with labels" if flags & 1 else ""))
    labels = None
    if flags & 1:
        labels = list(struct.unpack_from("<%di" % rows, payload, at))
        at += 4 * rows
    return rows, vocab, dtype, decode_params(payload, 24, rows), labels, memoryview(payload)[at:]


def encode_logprobs(rows, vocab, guarded, f32_bytes):
    """LOGPROBS: rows x u8 guarded (the row's label restored by a label guard), rows x vocab f32 logprobs."""
    return frame(LOGPROBS, struct.pack("<QQ", rows, vocab) + bytes(1 if g else 0 for g in guarded) + f32_bytes)


def decode_count(payload):
    """COUNT: (vocab, param tuple, draws, logits memoryview)."""
    if len(payload) < 16 + PARAMS.size:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed COUNT: %d payload bytes" % len(payload))
    (vocab,) = struct.unpack_from("<Q", payload, 0)
    (draws,) = struct.unpack_from("<Q", payload, 8 + PARAMS.size)
    _need(payload, 16 + PARAMS.size + 4 * vocab, "COUNT of %d tokens" % vocab)
    return vocab, PARAMS.unpack_from(payload, 8), draws, memoryview(payload)[16 + PARAMS.size:]


class VerifyRequest:
    """One request of a VERIFY, as decoded: vocab, g, form (DRAFT_*), params and draft_params (tuples), trials,
    draft_tokens (trials x g i32, flat), uniforms (the scripted stream, () for Philox), target ((g + 1) x vocab f32
    bytes) and draft (g x vocab f32 bytes, empty for the one-hot form)."""
    __slots__ = ("vocab", "g", "form", "params", "draft_params", "trials", "draft_tokens", "uniforms", "target",
                 "draft")


def decode_verify(payload):
    """VERIFY: a list of VerifyRequest (docs/process-protocol.md)."""
    try:
        (count,) = struct.unpack_from("<Q", payload, 0)
        at, requests = 8, []
        for _ in range(count):
            q = VerifyRequest()
            q.vocab, q.g, q.form = struct.unpack_from("<QII", payload, at)
            at += 16
            q.params, q.draft_params = decode_params(payload, at, 2)
            at += 2 * PARAMS.size
            q.trials, n_uniforms = struct.unpack_from("<QI", payload, at)
            at += 12
            if q.g > MAX_DRAFT or q.form > DRAFT_ONE_HOT or q.vocab < 1:
                raise SamplerError(ERR_INVALID_ARGUMENT, "VERIFY request with g %d, form %d, vocab %d" %
                                   (q.g, q.form, q.vocab))
            q.draft_tokens = struct.unpack_from("<%di" % (q.trials * q.g), payload, at)
            at += 4 * q.trials * q.g
            q.uniforms = struct.unpack_from("<%dd" % n_uniforms, payload, at)
            at += 8 * n_uniforms
            n = 4 * (q.g + 1) * q.vocab
            q.target = memoryview(payload)[at:at + n]
            at += n
            n = 0 if q.form == DRAFT_ONE_HOT else 4 * q.g * q.vocab
            q.draft = memoryview(payload)[at:at + n]
            at += n
            requests.append(q)
    except struct.error as e:
        raise SamplerError(ERR_INVALID_ARGUMENT, "malformed VERIFY: %s" % e)
    _need(payload, at, "VERIFY of %d requests" % count)
    return requests


def encode_tokens(tokens):
    """TOKENS of a sequence of ints (already checked to be in [-1, vocab))."""
    values = array("i", tokens)
    if not _LITTLE:
        values.byteswap()
    return frame(TOKENS, struct.pack("<Q", len(values)) + values.tobytes())


def encode_distribution(probabilities):
    values = array("d", probabilities)
    if not _LITTLE:
        values.byteswap()
    return frame(DISTRIBUTION, struct.pack("<Q", len(values)) + values.tobytes())


def encode_histogram_bytes(vocab, invalid, counts_u64le):
    """HISTOGRAM from counts already packed as vocab little-endian u64 (a tensor's or array's bytes)."""
    return frame(HISTOGRAM, struct.pack("<QQ", vocab, invalid) + counts_u64le)


def encode_histogram(counts, invalid):
    values = array("Q", counts)
    if not _LITTLE:
        values.byteswap()
    return frame(HISTOGRAM, struct.pack("<QQ", len(values), invalid) + values.tobytes())


def encode_verified(answers):
    """answers: per request (g, [(accepted, [tokens])...]); each trial's token slots padded to g + 1 with -1."""
    out = [struct.pack("<Q", len(answers))]
    for g, trials in answers:
        out.append(struct.pack("<Q", len(trials)))
        for accepted, emitted in trials:
            slots = list(emitted) + [INVALID_TOKEN] * (g + 1 - len(emitted))
            out.append(struct.pack("<i%di" % (g + 1), accepted, *slots))
    return frame(VERIFIED, b"".join(out))


# ---- the harness's side (a fake harness for tests, or any driver of a client) ----
def encode_hello():
    return frame(HELLO, struct.pack("<II", MAGIC, VERSION))


def encode_params(params):
    return b"".join(PARAMS.pack(*p) for p in params)


def _f32(values):
    data = array("f", values)
    if not _LITTLE:
        data.byteswap()
    return data.tobytes()


def encode_sample(rows_of_logits, params):
    rows, vocab = len(rows_of_logits), len(rows_of_logits[0]) if rows_of_logits else 0
    return frame(SAMPLE, struct.pack("<QQ", rows, vocab) + encode_params(params) +
                 b"".join(_f32(r) for r in rows_of_logits))


def encode_sample_replicated(rows_of_logits, replicas, params):
    rows, vocab = len(rows_of_logits), len(rows_of_logits[0])
    return frame(SAMPLE_REPLICATED, struct.pack("<QQQ", rows, vocab, replicas) + encode_params(params) +
                 b"".join(_f32(r) for r in rows_of_logits))


def encode_sample_steps(rows_of_logits, steps, params):
    rows, vocab = len(rows_of_logits), len(rows_of_logits[0])
    return frame(SAMPLE_STEPS, struct.pack("<QQQ", rows, vocab, steps) + encode_params(params) +
                 b"".join(_f32(r) for r in rows_of_logits))


def encode_processed(logits, params):
    return frame(PROCESSED, struct.pack("<Q", len(logits)) + PARAMS.pack(*params) + _f32(logits))


def encode_logprobs_batch(rows_of_logits, params, labels=None, dtype=DTYPE_FP32):
    rows, vocab = len(rows_of_logits), len(rows_of_logits[0]) if rows_of_logits else 0
    head = struct.pack("<QQII", rows, vocab, dtype, 0 if labels is None else 1) + encode_params(params)
    if labels is not None:
        head += struct.pack("<%di" % rows, *labels)
    return frame(LOGPROBS_BATCH, head + b"".join(_f32(r) for r in rows_of_logits))


def encode_count(logits, params, draws):
    return frame(COUNT, struct.pack("<Q", len(logits)) + PARAMS.pack(*params) + struct.pack("<Q", draws) +
                 _f32(logits))


def encode_verify(requests):
    """requests: dicts with vocab, g, form, params, draft_params, draft_tokens (flat), uniforms, target (flat),
    draft (flat)."""
    out = [struct.pack("<Q", len(requests))]
    for q in requests:
        trials = len(q["draft_tokens"]) // q["g"] if q["g"] else q.get("trials", 1)
        out.append(struct.pack("<QII", q["vocab"], q["g"], q["form"]) + PARAMS.pack(*q["params"]) +
                   PARAMS.pack(*q["draft_params"]) + struct.pack("<QI", trials, len(q["uniforms"])))
        out.append(struct.pack("<%di" % len(q["draft_tokens"]), *q["draft_tokens"]))
        out.append(struct.pack("<%dd" % len(q["uniforms"]), *q["uniforms"]))
        out.append(_f32(q["target"]) + _f32(q.get("draft", ())))
    return frame(VERIFY, b"".join(out))


def encode_bye():
    return frame(BYE)


def decode_answer(msg_type, payload):
    """An answer as Python values: ("HELLO", caps, name, profile), ("TOKENS", [tokens]), ("DISTRIBUTION", [p]),
    ("LOGPROBS", [guarded per row], [[logprob] per row]),
    ("HISTOGRAM", invalid, [counts]), ("ERROR", code, message), ("VERIFIED", [[(accepted, tokens)...]...])."""
    if msg_type == HELLO:
        magic, version, caps, n = struct.unpack_from("<IIII", payload, 0)
        name = bytes(payload[16:16 + n]).decode()
        (m,) = struct.unpack_from("<I", payload, 16 + n)
        return ("HELLO", caps, name, bytes(payload[20 + n:20 + n + m]).decode(), magic, version)
    if msg_type == TOKENS:
        (rows,) = struct.unpack_from("<Q", payload, 0)
        return ("TOKENS", list(struct.unpack_from("<%di" % rows, payload, 8)))
    if msg_type == DISTRIBUTION:
        (vocab,) = struct.unpack_from("<Q", payload, 0)
        return ("DISTRIBUTION", list(struct.unpack_from("<%dd" % vocab, payload, 8)))
    if msg_type == HISTOGRAM:
        vocab, invalid = struct.unpack_from("<QQ", payload, 0)
        return ("HISTOGRAM", invalid, list(struct.unpack_from("<%dQ" % vocab, payload, 16)))
    if msg_type == ERROR:
        code, n = struct.unpack_from("<II", payload, 0)
        return ("ERROR", code, bytes(payload[8:8 + n]).decode())
    if msg_type == LOGPROBS:
        rows, vocab = struct.unpack_from("<QQ", payload, 0)
        guarded = list(payload[16:16 + rows])
        values = struct.unpack_from("<%df" % (rows * vocab), payload, 16 + rows)
        return ("LOGPROBS", guarded, [list(values[r * vocab:(r + 1) * vocab]) for r in range(rows)])
    if msg_type == VERIFIED:
        return ("VERIFIED", payload)  # sized by the requests: tests read it with decode_verified
    return (MESSAGE_NAMES.get(msg_type, str(msg_type)), payload)


def decode_verified(payload, gs):
    """VERIFIED for requests of draft lengths gs: per request a list of (accepted, [g + 1 tokens])."""
    (count,) = struct.unpack_from("<Q", payload, 0)
    at, out = 8, []
    for r in range(count):
        (trials,) = struct.unpack_from("<Q", payload, at)
        at += 8
        g, rows = gs[r], []
        for _ in range(trials):
            values = struct.unpack_from("<i%di" % (g + 1), payload, at)
            at += 4 * (g + 2)
            rows.append((values[0], list(values[1:])))
        out.append(rows)
    return out
