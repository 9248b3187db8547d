"""What a served callable receives and returns: logits and per-row parameters as torch tensors (on a device), numpy
arrays, or plain Python (lists of array('f') rows), and the checks on what it returns (one integer token per row in
[-1, vocab), finite log-probabilities of the right shape). torch and numpy are imported only when asked for.
"""
import collections
import math
import sys

from .protocol import ERR_FAILED, INVALID_TOKEN, SamplerError, _f32, floats

SamplingParams = collections.namedtuple("SamplingParams", "temperature top_k top_p min_p seed offset")
SamplingParams.__doc__ = ("One row's sampling parameters, the user's values unchanged (docs/process-protocol.md): "
                          "temperature, top_k, top_p, min_p, seed (u64), offset (u64). Which values disable a filter, "
                          "are greedy or are invalid is the semantics profile's business.")

_U64 = 1 << 64  # 2^64
_COLUMNS = SamplingParams._fields


def lanes_for(vocab, on_cuda):
    """L(V): the calls per window of a counted row, a power of two with L * V <= 2^24 elements on cuda (2^16
    elsewhere), at most 65536: one function of V and the device, so that COUNT (replicated rows, `lanes` at a time)
    and SAMPLE draw the same windows. (2^27 on cuda was tried on an H100 on 2026-11-26: the smoke suite took 61 s
    instead of 24 s, every SAMPLE step drawing 8x the lanes.)"""
    budget = (1 << 24) if on_cuda else (1 << 16)
    lanes = 1
    while lanes * 2 <= 65536 and lanes * 2 * vocab <= budget:
        lanes *= 2
    return lanes


def _signed(v):
    """A u64 as the int64 of the same bits (torch and numpy int64 columns)."""
    return v - _U64 if v >= (1 << 63) else v


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _is_numpy(x):
    return type(x).__module__ == "numpy"


class BatchParams:
    """The parameters of the rows of one call, as columns of the call's array kind: `temperature`, `top_p`, `min_p`
    (float64), `top_k`, `seed`, `offset` (int64; a seed or offset of 2^63 or more as the int64 of the same bits) and
    `row` (int64: which distinct logits row of the request this call row is, for replicated rows). `len(params)` is
    the number of rows; `params[i]` and iteration give SamplingParams of Python scalars (seed and offset unsigned);
    `params.host(name)` a column as a list of Python scalars. `lanes` is the serving window L(V): replicated rows of a
    COUNT come `lanes` at a time, aligned to multiples of `lanes` of the offset (draws.windowed_* use it). Columns
    are built on first use."""

    def __init__(self, backend, host, lanes):
        """host: {name: list of Python scalars} for the six SamplingParams fields and "row"."""
        self._backend, self._host, self.lanes = backend, host, lanes
        self._columns = {}

    @classmethod
    def of_rows(cls, backend, tuples, rows, lanes):
        """From param tuples (temperature, top_k, top_p, min_p, seed, offset) and the distinct-row index of each."""
        host = {name: [t[j] for t in tuples] for j, name in enumerate(_COLUMNS)}
        host["row"] = list(rows)
        return cls(backend, host, lanes)

    @classmethod
    def of_draws(cls, backend, t, start, count, lanes):
        """`count` draws of one row with params tuple t at offsets start, start + 1, ... (mod 2^64)."""
        host = {name: [t[j]] * count for j, name in enumerate(_COLUMNS[:5])}
        host["offset"] = (list(range(start, start + count)) if start + count <= _U64 else
                          [(start + i) % _U64 for i in range(count)])
        host["row"] = [0] * count
        return cls(backend, host, lanes)

    def host(self, name):
        return self._host[name]

    def add_column(self, name, values):
        """One more int64 column of the rows (LOGPROBS_BATCH's `label`: the token each row's label guard keeps)."""
        self._host[name] = list(values)

    def __len__(self):
        return len(self._host["row"])

    def __getitem__(self, i):
        return SamplingParams(*(self._host[name][i] for name in _COLUMNS))

    def __iter__(self):
        return (SamplingParams(*t) for t in zip(*(self._host[name] for name in _COLUMNS)))

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._host:
            raise AttributeError(name)
        column = self._columns.get(name)
        if column is None:
            values = self._host[name]
            if name in ("seed", "offset") and self._backend.name != "python":
                values = [_signed(v) for v in values]
            kind = "float" if name in ("temperature", "top_p", "min_p") else "int"
            column = self._columns[name] = self._backend.column(values, kind)
        return column

    def __repr__(self):
        shown = ", ".join(str(tuple(self[i])) for i in range(min(3, len(self))))
        return "BatchParams(%d rows: %s%s)" % (len(self), shown, ", ..." if len(self) > 3 else "")


class PythonBackend:
    """Lists: logits is a list of array('f') rows, columns are lists."""
    name = "python"
    on_cuda = False

    def logits(self, data, rows, vocab):
        values = floats(data)
        return [values[r * vocab:(r + 1) * vocab] for r in range(rows)]

    def column(self, values, kind):
        return list(values)

    def replicate(self, logits, index):
        return [logits[i] for i in index]

    def int_matrix(self, values, rows, cols):
        return [list(values[r * cols:(r + 1) * cols]) for r in range(rows)]


class NumpyBackend:
    name = "numpy"
    on_cuda = False

    def __init__(self):
        import numpy
        self.np = numpy

    def logits(self, data, rows, vocab):
        return self.np.frombuffer(data, dtype="<f4").astype(self.np.float32).reshape(rows, vocab)

    def column(self, values, kind):
        return self.np.array(values, dtype=self.np.float64 if kind == "float" else self.np.int64)

    def replicate(self, logits, index):
        return logits[self.np.asarray(index, dtype=self.np.int64)]

    def int_matrix(self, values, rows, cols):
        return self.np.array(values, dtype=self.np.int64).reshape(rows, cols)


class TorchBackend:
    name = "torch"

    def __init__(self, device):
        import torch
        self.torch = torch
        self.device = torch.device(device)
        self.on_cuda = self.device.type == "cuda"

    def logits(self, data, rows, vocab):
        t = self.torch
        if rows * vocab == 0:
            return t.empty((rows, vocab), dtype=t.float32, device=self.device)
        host = t.frombuffer(data, dtype=t.float32, count=rows * vocab).reshape(rows, vocab)
        return host.to(self.device, copy=True)

    def column(self, values, kind):
        t = self.torch
        return t.tensor(values, dtype=t.float64 if kind == "float" else t.int64, device=self.device)

    def replicate(self, logits, index):
        """Rows of `logits` by index, gathered on the device (the row is sent to the device once)."""
        if not self.torch.is_tensor(index):
            index = self.torch.as_tensor(index, dtype=self.torch.int64, device=self.device)
        return logits.index_select(0, index)

    def int_matrix(self, values, rows, cols):
        t = self.torch
        return t.tensor(values, dtype=t.int64, device=self.device).reshape(rows, cols)


AUTO_DEVICE = "auto"
TENSOR_KINDS = ("auto", "torch", "numpy", "python")


def _torch_devices(torch):
    """The torch devices this process can use, as strings: cpu, then cuda:0 .. cuda:N-1."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found += ["cuda:%d" % i for i in range(torch.cuda.device_count())]
    return found


def check_device(tensors, device):
    """Refuses, at construction, a device the callables could not get (ValueError naming the device and what is
    available here), so that a sampler never starts serving on a device that fails every request. "auto" (or None)
    and "cpu" are always accepted; any other device needs torch and must be usable by it."""
    if device in (None, AUTO_DEVICE, "cpu"):
        return
    if tensors in ("numpy", "python"):
        raise ValueError("device=%r needs tensors='torch' (got tensors=%r)" % (device, tensors))
    try:
        import torch
    except ImportError as e:
        raise ValueError("device=%r needs torch, which does not import in %s (%s); device='auto' serves on the CPU "
                         "without it" % (device, sys.executable, e))
    try:
        wanted = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as e:
        raise ValueError("device=%r is not a torch device (%s); available here: %s" %
                         (device, str(e).splitlines()[0], ", ".join(_torch_devices(torch))))
    if wanted.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError("device=%r: torch %s in %s sees no CUDA device (torch.cuda.is_available() is False%s); "
                             "available here: cpu. device='auto' takes cuda when torch sees a GPU, else cpu" %
                             (device, torch.__version__, sys.executable,
                              "" if torch.version.cuda else ": this torch is built without CUDA"))
        if wanted.index is not None and wanted.index >= count:
            raise ValueError("device=%r: torch sees %d CUDA device(s); available here: %s" %
                             (device, count, ", ".join(_torch_devices(torch))))
        return
    try:
        torch.empty(0, device=wanted)
    except (RuntimeError, TypeError, ValueError) as e:
        raise ValueError("device=%r is not usable here (%s); available here: %s" %
                         (device, str(e).splitlines()[0], ", ".join(_torch_devices(torch))))


def make_backend(tensors="auto", device=AUTO_DEVICE):
    """The array kind the callables get: "torch" (on `device`; "auto": cuda when torch sees a GPU, else cpu),
    "numpy", "python", or "auto": torch when it imports, else numpy, else python."""
    check_device(tensors, device)
    if tensors == "auto":
        for kind in ("torch", "numpy"):
            try:
                __import__(kind)
                tensors = kind
                break
            except ImportError:
                continue
        else:
            tensors = "python"
    if tensors == "torch":
        import torch
        if device in (None, AUTO_DEVICE):
            device = "cuda" if torch.cuda.is_available() else "cpu"
        return TorchBackend(device)
    if device not in (None, AUTO_DEVICE, "cpu"):
        raise ValueError("device=%r needs tensors='torch' (got tensors=%r: torch does not import)" % (device, tensors))
    if tensors == "numpy":
        return NumpyBackend()
    if tensors == "python":
        return PythonBackend()
    raise ValueError("tensors=%r: use 'torch', 'numpy', 'python' or 'auto'" % (tensors,))


# ---- what the callables return, checked ----
def _fail(what, message):
    raise SamplerError(ERR_FAILED, "%s %s" % (what, message))


def _shape_of(x):
    shape = getattr(x, "shape", None)
    return tuple(int(d) for d in shape) if shape is not None else None


def _integer_dtype(x):
    """Whether x (a torch tensor, or a numpy array or scalar) has an integer dtype (not bool)."""
    if _is_torch(x):
        return not x.is_floating_point() and not x.is_complex() and str(x.dtype) != "torch.bool"
    return getattr(x.dtype, "kind", "") in "iu"


def as_int(v):
    """v as a Python int when it is one: an int (not a bool), or a 0-d torch tensor or numpy scalar of an integer
    dtype; None for anything else (a float, also an integral one such as 3.0 or np.float32(3): a float result is
    refused, never truncated, as a float array is)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if _shape_of(v) == () and hasattr(v, "dtype") and _integer_dtype(v):
        return int(v)
    return None


def described(v):
    """A value as an error names it: its repr, with the dtype of a numpy or torch scalar ("1.75 (numpy.float32)")."""
    dtype = getattr(v, "dtype", None)
    if dtype is None or isinstance(v, (bool, int, float)):
        return repr(v)
    text = repr(v.item()) if hasattr(v, "item") and _shape_of(v) == () else repr(v)
    return "%s (%s.%s)" % (text, type(v).__module__.split(".")[0], str(dtype).replace("torch.", ""))


def int_list(result, rows, what):
    """The values of a 1-D integer result of `rows` entries as a list of Python ints: a torch tensor or numpy array
    of an integer dtype, or a sequence of ints (or of integer numpy or torch scalars). Anything else (a float or
    bool dtype, another shape, a NaN, a float in a list, also a numpy float32 scalar) is an ERROR naming what was
    returned and what is expected."""
    shape = _shape_of(result)
    if shape is not None:
        dtype = str(result.dtype)
        integer = _integer_dtype(result)
        if shape != (rows,):
            hint = " (drop the last dimension: .squeeze(-1))" if shape == (rows, 1) else ""
            _fail(what, "returned shape %s; expected (%d,): one token per row%s" % (shape, rows, hint))
        if not integer:
            _fail(what, "returned dtype %s; expected an integer dtype (int32 or int64)" % dtype)
        return result.tolist()
    try:
        values = list(result)
    except TypeError:
        _fail(what, "returned %s; expected a 1-D tensor, array or list of %d ints" % (type(result).__name__, rows))
    if len(values) != rows:
        _fail(what, "returned %d values; expected %d: one token per row" % (len(values), rows))
    out = []
    for r, v in enumerate(values):
        i = as_int(v)
        if i is None:
            _fail(what, "returned %s for row %d; expected an int (a token id, or -1; an integer dtype, never a float: "
                  "a float is not truncated)" % (described(v), r))
        out.append(i)
    return out


def tokens_in_range(tokens, vocab, what, rows_named=None):
    """Raises the ERROR of the first token outside [-1, vocab), naming its row."""
    if tokens and (min(tokens) < INVALID_TOKEN or max(tokens) >= vocab):
        r = next(i for i, t in enumerate(tokens) if t < INVALID_TOKEN or t >= vocab)
        row = rows_named(r) if rows_named else "row %d" % r
        _fail(what, "returned token %d for %s; allowed 0..%d (vocab %d), or -1 for a row that cannot be sampled" %
              (tokens[r], row, vocab - 1, vocab))
    return tokens


def float_matrix(result, rows, vocab, what):
    """A [rows, vocab] float result as a list of rows of Python floats; NaN named by row and token."""
    shape = _shape_of(result)
    if shape is not None:
        if _is_torch(result):
            ok = result.is_floating_point()
            result = result.detach().double().cpu()
        else:
            ok = result.dtype.kind == "f"
        if not ok:
            _fail(what, "returned dtype %s; expected floats" % result.dtype)
        if shape not in ((rows, vocab), (vocab,) if rows == 1 else None):
            _fail(what, "returned shape %s; expected (%d, %d)" % (shape, rows, vocab))
        values = result.tolist()
        matrix = values if len(shape) == 2 else [values]
    else:
        flat = rows == 1 and len(result) > 0 and isinstance(result[0], (int, float))  # one row given as its values
        matrix = [list(result)] if flat else [list(r) for r in result]
        if len(matrix) != rows or any(len(r) != vocab for r in matrix):
            _fail(what, "returned %d rows of %s values; expected %d rows of %d" %
                  (len(matrix), sorted({len(r) for r in matrix}), rows, vocab))
    for r, row in enumerate(matrix):
        for token, v in enumerate(row):
            if math.isnan(v):
                _fail(what, "returned NaN for token %d of row %d; expected a log-probability (-inf outside the kept "
                      "set)" % (token, r))
    return matrix


def matrix_f32(result, rows, vocab, what):
    """A [rows, vocab] float result as little-endian f32 bytes, checked for shape and dtype (values as they are: a
    NaN is the harness's to judge)."""
    shape = _shape_of(result)
    if shape is None:
        return _f32([v for row in float_matrix(result, rows, vocab, what) for v in row])
    if not (result.is_floating_point() if _is_torch(result) else result.dtype.kind == "f"):
        _fail(what, "returned dtype %s; expected floats" % result.dtype)
    if shape not in ((rows, vocab), (vocab,) if rows == 1 else None):
        _fail(what, "returned shape %s; expected (%d, %d)" % (shape, rows, vocab))
    if _is_torch(result):
        result = result.detach().float().cpu().contiguous()
        try:
            return result.numpy().astype("<f4").tobytes()
        except (ImportError, RuntimeError):  # torch without numpy
            return _f32(result.reshape(-1).tolist())
    return result.astype("<f4").tobytes()


def tally(histogram, tokens):
    """Adds checked tokens to a histogram; returns how many were -1 (invalid draws)."""
    invalid = 0
    for t in tokens:
        if t == INVALID_TOKEN:
            invalid += 1
        else:
            histogram[t] += 1
    return invalid
