"""decoder_balance of the image decoders (ladle only; "fixed" by default).

"fixed" keeps hw_decoder_load's share of JPEGs for the hardware decoder, so every run
decodes each image the same way; "adaptive" starts at hw_decoder_load and moves the share
by 1/64 after every batch towards what the batch waited for (src/ops/image/decoders_mixed.c,
rebalance): the engines, the CPU workers, or neither. The share in use is the decoder's
counter "hw_share_per_mille" (only with "adaptive"). On the CPU the argument changes nothing.
Tolerance of nvJPEG's pixels against the CPU decoder: test_image_hybrid_decoder.py's."""

import numpy as np
import pytest

import ladle
from ladle import fn, types
from conftest import cuda_usable
from test_image_hybrid_decoder import decode, encoded


def test_unknown_choice_names_operator_and_argument():
    pipe = ladle.Pipeline(batch_size=2, num_threads=1, device_id=None)
    with pytest.raises(ladle.Error, match=r"decoders\.image.*decoder_balance"):
        with pipe:
            x = fn.external_source(name="x", dtype=types.UINT8, ndim=1)
            pipe.set_outputs(fn.decoders.image(x, decoder_balance="sideways"))


def test_adaptive_changes_nothing_on_the_cpu():
    data = encoded()
    fixed, fixed_counts = decode(data, "cpu", iterations=2)
    adaptive, adaptive_counts = decode(data, "cpu", iterations=2, decoder_balance="adaptive")
    for a, b in zip(fixed, adaptive):
        np.testing.assert_array_equal(a, b)
    assert fixed_counts == {"cpu": 2 * len(data), "hw": 0, "gpu_hybrid": 0, "retried_on_cpu": 0}
    assert adaptive_counts == fixed_counts  # no share to report


@pytest.mark.gpu
def test_adaptive_share_moves_and_images_stay_right():
    if not cuda_usable():
        pytest.skip("no usable CUDA device")
    data = encoded() * 4  # batch 32
    cpu, _ = decode(data, "cpu")
    for start in (0.0, 0.5, 1.0):
        out, counts = decode(data, "mixed", iterations=12, hw_decoder_load=start, decoder_balance="adaptive")
        share = counts["hw_share_per_mille"]
        assert 0 <= share <= 1000
        # 12 batches, one step (1/64) each. From 0 nothing goes to the engines, so nothing waits for them,
        # and every step is up.
        assert abs(share / 1000 - start) <= 12 / 64 + 1e-3
        if start == 0.0:
            assert share == 188  # 12/64
        assert counts["hw"] + counts["cpu"] + counts["gpu_hybrid"] == 12 * len(data)
        for k, img in enumerate(out):
            want = cpu[k % len(data)]
            assert img.shape == want.shape
            diff = np.abs(img.astype(np.int16) - want.astype(np.int16))
            assert diff.mean() < 2 and np.percentile(diff, 99) <= 16
