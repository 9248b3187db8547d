"""samplecheck's Python front door (docs/python.md).

    import samplecheck

    def sample(logits, params):                    # logits [rows, vocab]; params: per-row columns
        ...                                        # -> one token per row (-1: the row cannot be sampled)

    samplecheck.serve(sample, name="mine", profile="vllm")          # a process client: --sampler process:...
    assert samplecheck.check(sample, suite="smoke", profile="vllm").passed   # or in pytest
    assert samplecheck.check_replay(trainer=samplecheck.Sampler(logprobs=replay, labels=True)).passed  # RL replay

The core (protocol, serving, check) is standard library only; torch or numpy arrays are used when asked for
(tensors="torch" | "numpy" | "python" | "auto"). samplecheck.draws holds the per-draw helpers on torch,
samplecheck.philox the Philox uniform of `--sampler exact`.
"""
from .checking import CaseResult, CheckResult, SamplecheckNotFound, check, check_replay, find_program
from .protocol import (CAP_COUNT, CAP_COUNT_DISTRIBUTIONAL, CAP_NONDETERMINISTIC, CAP_PROCESSED,
                       CAP_SAMPLE_REPLICATED, CAP_VERIFY, CAP_VERIFY_SCRIPTED, DRAFT_LOGITS, DRAFT_ONE_HOT,
                       DRAFT_PROBABILITIES, ERR_FAILED, ERR_INVALID_ARGUMENT, ERR_INVALID_ROW, ERR_UNSUPPORTED,
                       INVALID_TOKEN, SamplerError)
from .serving import Sampler, VerifyCall, cannot_serve, serve
from .tensors import BatchParams, SamplingParams, lanes_for

__version__ = "0.1.0"

__all__ = ["BatchParams", "CaseResult", "CheckResult", "Sampler", "SamplecheckNotFound", "SamplerError",
           "SamplingParams", "VerifyCall", "cannot_serve", "check", "check_replay", "find_program", "lanes_for",
           "serve",
           "CAP_COUNT", "CAP_COUNT_DISTRIBUTIONAL", "CAP_NONDETERMINISTIC", "CAP_PROCESSED",
           "CAP_SAMPLE_REPLICATED", "CAP_VERIFY", "CAP_VERIFY_SCRIPTED", "DRAFT_LOGITS", "DRAFT_ONE_HOT",
           "DRAFT_PROBABILITIES", "ERR_FAILED", "ERR_INVALID_ARGUMENT", "ERR_INVALID_ROW", "ERR_UNSUPPORTED",
           "INVALID_TOKEN"]
