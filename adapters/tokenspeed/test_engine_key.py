"""tokenspeed_adapter.engine_key without a tree or a GPU: samplecheck's (seed, offset) as TokenSpeed's (request seed,
int32 position). The spec suites' trials carry offsets past 2^31, which the adapter refused on the GPU run of main
18abd63 (every close-g4, very-close-g3, greedy-g3, bf16 and mixed-batch trial)."""
import pytest

pytest.importorskip("torch")
import tokenspeed_adapter as ta  # noqa: E402


def test_small_offsets_are_the_position_under_the_callers_seed():
    assert ta.engine_key(7, 0) == (7, 0)
    assert ta.engine_key(7, 2 ** 30 - 1) == (7, 2 ** 30 - 1)
    assert ta.engine_key(2 ** 64 - 1, 5) == (-1, 5)      # the u64 seed as TokenSpeed's int64


def test_large_offsets_fold_into_the_seed_and_stay_int32_with_room_for_the_draft_slots():
    keys = [ta.engine_key(3, o) for o in (2 ** 30, 2 ** 31 + 9, 3465504385, 2 ** 64 - 1)]
    assert all(0 <= pos < 2 ** 30 and -2 ** 63 <= seed < 2 ** 63 for seed, pos in keys)
    assert len(set(keys)) == len(keys) and all(seed != 3 for seed, _ in keys)
    assert ta.engine_key(3, 3465504385) == ta.engine_key(3, 3465504385)
    base_seed, base_pos = ta.engine_key(3, 3465504385)
    assert ta.engine_key(3, 3465504385 + 4) == (base_seed, base_pos + 4)   # a trial's rows: consecutive positions


def test_negative_offsets_are_refused():
    with pytest.raises(ValueError, match="offset must be >= 0"):
        ta.engine_key(1, -1)


def test_a_position_stride_spaces_adjacent_offsets_and_stays_below_2_30():
    assert ta.engine_key(7, 3, 16) == (7, 48)
    seed, pos = ta.engine_key(7, 2 ** 26 + 5, 16)       # past 2^26: folded, so that 16 * position < 2^30
    assert seed != 7 and pos == 5 * 16
    assert all(0 <= ta.engine_key(7, o, 16)[1] < 2 ** 30 for o in (2 ** 26 - 1, 2 ** 40, 2 ** 64 - 1))
    with pytest.raises(ValueError, match="power of two"):
        ta.engine_key(7, 3, 12)


def test_a_slot_keeps_its_request_while_its_key_holds_and_a_changed_key_is_a_new_request():
    ids = iter(range(100))
    slot_keys, slot_ids = [None] * 3, [None] * 3
    first = ta.request_ids(slot_keys, slot_ids, ["a", "a", "b"], lambda: next(ids))
    assert first == [0, 1, 2]                                   # every slot a new request, each its own id
    assert ta.request_ids(slot_keys, slot_ids, ["a", "a", "b"], lambda: next(ids)) == first
    assert ta.request_ids(slot_keys, slot_ids, ["a", "c", "b"], lambda: next(ids)) == [0, 3, 2]
    assert ta.request_ids(slot_keys, slot_ids, ["a", "c"], lambda: next(ids)) == [0, 3]   # fewer rows than slots
    assert slot_keys == ["a", "c", "b"]


def test_the_keys_of_a_column_of_offsets_are_engine_key_row_by_row():
    """Issue 41: one request's offsets as engine_serve's int64 column of their u64 bits map at once to the (seed,
    position) keys engine_key gives row by row, the 2^30 fold included (no tree, no GPU)."""
    import random

    import torch
    rng = random.Random(3)
    offsets = [rng.getrandbits(64) for _ in range(300)] + [0, 2 ** 30 - 1, 2 ** 30, 2 ** 63, 2 ** 64 - 1]
    column = torch.tensor([ta.es.as_int64(v) for v in offsets])
    for seed in (0, 17, 2 ** 63 + 1, 2 ** 64 - 1):
        for stride in (1, 16):
            keys = [ta.engine_key(ta.es.as_int64(seed), o, stride) for o in offsets]
            seeds, positions = ta.engine_key_columns(seed, column, stride)
            assert positions.tolist() == [k[1] for k in keys] and seeds == [k[0] for k in keys]
            low = column[:20] & ((1 << (ta.POSITION_BITS - stride.bit_length() + 1)) - 1)
            one, _ = ta.engine_key_columns(seed, low, stride)
            assert one == ta.es.as_int64(seed)
