"""The schemes (auto_augment, rand_augment, trivial_augment_wide): their
policies and suites against DALI's objects (names, probabilities, magnitude
bins, magnitude ranges and the parameters every bin maps to), which
augmentation each sample gets (re-drawn here with the same seed, since
ladle's draws with an explicit seed depend only on (seed, epoch, sample)),
seeds, and errors."""

import warnings

import numpy as np
import pytest

import ladle
from ladle import fn, types
from ladle.auto_aug import augmentations as A
from ladle.auto_aug import auto_augment, rand_augment, trivial_augment
from ladle.auto_aug.core import Policy
from conftest import dali_or_skip, requires_ops

pytestmark = requires_ops("equalize", "filter", "reductions.mean", "_conditional.merge")


def dali_aa():
    dali_or_skip()
    from nvidia.dali.auto_aug import auto_augment as daa, rand_augment as dra, trivial_augment as dta

    return daa, dra, dta


def params_of(aug, bins, dali):
    mags = aug._get_magnitudes(bins) if dali else aug._magnitudes(bins)
    if mags is None:
        return None
    signed = np.stack([mags, -np.asarray(mags)], 1).reshape(-1) if aug.randomly_negate else mags
    return aug._map_mags_to_params(signed) if dali else aug._params(signed)


def same_augmentation(ours, theirs, bins):
    assert ours.name == theirs.name
    assert ours.randomly_negate == theirs.randomly_negate, ours.name
    if theirs.mag_range is None:
        assert ours.mag_range is None
        return
    np.testing.assert_allclose(np.asarray(ours.mag_range, np.float64), np.asarray(theirs.mag_range, np.float64))
    a, b = params_of(ours, bins, False), params_of(theirs, bins, True)
    assert a.dtype == b.dtype and a.shape == b.shape, ours.name
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-6, err_msg=ours.name)


@pytest.mark.parametrize("getter", ["get_image_net_policy", "get_reduced_cifar10_policy", "get_svhn_policy",
                                    "get_reduced_image_net_policy"])
@pytest.mark.parametrize("use_shape", [False, True])
def test_policies_match_dali(getter, use_shape):
    daa, _, _ = dali_aa()
    kw = {} if getter == "get_reduced_image_net_policy" else dict(use_shape=use_shape)
    if getter == "get_reduced_image_net_policy" and use_shape:
        pytest.skip("no translations")
    ours, theirs = getattr(auto_augment, getter)(**kw), getattr(daa, getter)(**kw)
    assert ours.name == theirs.name and ours.num_magnitude_bins == theirs.num_magnitude_bins == 11
    assert len(ours.sub_policies) == len(theirs.sub_policies) == 25
    for s, t in zip(ours.sub_policies, theirs.sub_policies):
        assert [(a.name, p, m) for a, p, m in s] == [(a.name, p, m) for a, p, m in t]
        for (a, _, _), (b, _, _) in zip(s, t):
            same_augmentation(a, b, 11)
    assert list(ours.augmentations) == list(theirs.augmentations)


@pytest.mark.parametrize("suite", ["rand", "rand_non_monotonic", "trivial"])
@pytest.mark.parametrize("use_shape,limits", [(False, {}), (True, {}), (False, {"max_translate_abs": (20, 40)}),
                                              (True, {"max_translate_rel": 0.3})])
@pytest.mark.parametrize("bins", [11, 31])
def test_suites_match_dali(suite, use_shape, limits, bins):
    _, dra, dta = dali_aa()
    name = {"rand": "get_rand_augment_suite", "rand_non_monotonic": "get_rand_augment_non_monotonic_suite",
            "trivial": "get_trivial_augment_wide_suite"}[suite]
    mod, dmod = (trivial_augment, dta) if suite == "trivial" else (rand_augment, dra)
    ours, theirs = getattr(mod, name)(use_shape, **limits), getattr(dmod, name)(use_shape, **limits)
    assert [a.name for a in ours] == [a.name for a in theirs]
    for a, b in zip(ours, theirs):
        same_augmentation(a, b, bins)


# --- what each sample gets -----------------------------------------------------

def np_posterize(x, bits):
    return x & np.uint8(0xFF ^ ((1 << (8 - bits)) - 1))


def np_equalize(x):
    out = np.empty_like(x)
    for c in range(x.shape[2]):
        p = x[..., c]
        hist = np.bincount(p.ravel(), minlength=256)
        c0 = hist[np.nonzero(hist)[0][0]]
        if c0 == p.size:
            out[..., c] = p
            continue
        lut = np.clip(np.rint((np.cumsum(hist) - c0) * (255.0 / (p.size - c0))), 0, 255).astype(np.uint8)
        out[..., c] = lut[p]
    return out


def np_auto_contrast(x):
    lo, hi = x.min(axis=(0, 1)), x.max(axis=(0, 1))
    spread = hi.astype(np.int64) - lo
    scale = np.where(spread > 0, 255 / np.where(spread > 0, spread, 255), 1.0).astype(np.float32)
    return np.clip(np.rint((x - np.where(spread > 0, lo, 0)).astype(np.float32) * scale), 0, 255).astype(np.uint8)


def np_solarize(x, threshold):
    return np.where(x < threshold, x, 255 - x).astype(np.uint8)


def batch_of(n, seed=0, size=(24, 20, 3)):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, dtype=np.uint8) for _ in range(n)]


def run(graph, batch, seed=None, iterations=1):
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, device_id=None, seed=seed or 0)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        outs = graph(x)
        pipe.set_outputs(*(outs if isinstance(outs, tuple) else (outs,)))
    result = []
    for _ in range(iterations):
        pipe.feed_input("x", batch)
        result.append([[np.array(t.at(i)) for i in range(len(t))] for t in pipe.run()])
    pipe.close()
    return result if iterations > 1 else result[0]


def test_trivial_augment_picks_the_drawn_augmentation():
    keep = ["equalize", "auto_contrast", "identity", "posterize"]  # (the wide suite has no invert)
    names = [a.name for a in trivial_augment.get_trivial_augment_wide_suite()]
    excluded = [n for n in names if n not in keep]
    batch = batch_of(40)

    def graph(x):
        # trivial_augment_wide(excluded=...) would pass fill_value, which none of these takes: an error, as in DALI
        suite = [a for a in trivial_augment.get_trivial_augment_wide_suite() if a.name not in excluded]
        y = trivial_augment.apply_trivial_augment(suite, x, seed=17)
        bins = fn.random.uniform(values=list(range(31)), dtype=types.INT32, seed=17)
        ops = fn.random.uniform(values=list(range(len(keep))), dtype=types.INT32, seed=17)
        return y, bins, ops

    out, bins, ops = run(graph, batch)
    order = [n for n in names if n in keep]  # the suite's order
    seen = set()
    for x, y, b, k in zip(batch, out, bins, ops):
        name = order[int(k)]
        seen.add(name)
        bits = int(min(max(round(float(np.linspace(8, 2, 31, dtype=np.float32)[int(b)])), 1), 8))
        want = {"equalize": lambda: np_equalize(x), "identity": lambda: x,
                "auto_contrast": lambda: np_auto_contrast(x), "posterize": lambda: np_posterize(x, bits)}[name]()
        np.testing.assert_array_equal(y, want, err_msg=name)
    assert seen == set(keep)  # 40 samples reach all four


def test_rand_augment_applies_n_drawn_augmentations_at_m():
    keep = ["posterize", "solarize", "equalize", "auto_contrast", "identity"]
    names = [a.name for a in rand_augment.get_rand_augment_suite()]
    order = [n for n in names if n in keep]
    batch, m = batch_of(24, 1), 20

    def graph(x):
        suite = [a for a in rand_augment.get_rand_augment_suite() if a.name in keep]
        y = rand_augment.apply_rand_augment(suite, x, n=2, m=m, seed=5)
        return y, fn.random.uniform(values=list(range(len(keep))), dtype=types.INT32, shape=[2], seed=5)

    out, ops = run(graph, batch)
    bits = int(min(max(round(float(np.linspace(8, 4, 31, dtype=np.float32)[m])), 1), 8))
    threshold = np.linspace(256, 0, 31, dtype=np.float32)[m]
    for x, y, ks in zip(batch, out, ops):
        want = x
        for k in ks:
            want = {"posterize": lambda v: np_posterize(v, bits), "solarize": lambda v: np_solarize(v, threshold),
                    "equalize": np_equalize, "auto_contrast": np_auto_contrast, "identity": lambda v: v}[
                order[int(k)]](want)
        np.testing.assert_array_equal(y, want)


def test_apply_auto_augment_runs_steps_with_their_probability():
    policy = Policy("test", 11, [[(A.invert, 0.5, None), (A.equalize, 0.7, None)],
                                 [(A.posterize.augmentation((0, 4), False, A.poster_mask_uint8), 1.0, 8)],
                                 [(A.auto_contrast, 0.3, None), (A.invert, 1.0, None)]])
    batch = batch_of(48, 2)

    def graph(x):
        y = auto_augment.apply_auto_augment(policy, x, seed=9)
        return (y, fn.random.uniform(range=[0, 1], shape=[2], dtype=types.FLOAT, seed=9),
                fn.random.uniform(values=[0, 1, 2], dtype=types.INT32, seed=9))

    out, runs, subs = run(graph, batch)
    funcs = {"invert": lambda v: 255 - v, "equalize": np_equalize, "auto_contrast": np_auto_contrast,
             "posterize": lambda v: np_posterize(v, 3)}  # bin 8 of (0, 4): 3.2 -> 3 bits
    ran = 0
    for x, y, r, s in zip(batch, out, runs, subs):
        want = x
        for k, (aug, p, _) in enumerate(policy.sub_policies[int(s)]):
            if r[k] < p:
                want = funcs[aug.name](want)
                ran += 1
        np.testing.assert_array_equal(y, want)
    assert 0 < ran < 2 * len(batch)


@pytest.mark.parametrize("scheme", [
    lambda x, s: auto_augment.auto_augment(x, seed=s),
    lambda x, s: auto_augment.auto_augment(x, policy_name="reduced_cifar10", shape=(24, 20), seed=s),
    lambda x, s: rand_augment.rand_augment(x, n=3, m=15, seed=s),
    lambda x, s: rand_augment.rand_augment(x, n=1, m=5, monotonic_mag=False, seed=s, fill_value=None),
    lambda x, s: trivial_augment.trivial_augment_wide(x, seed=s, shape=(24, 20)),
])
def test_seeds_reproduce(scheme):
    batch = batch_of(16, 3)
    a = run(lambda x: scheme(x, 42), batch, iterations=2)
    b = run(lambda x: scheme(x, 42), batch, iterations=2)
    c = run(lambda x: scheme(x, 43), batch)
    for it in range(2):
        for u, v in zip(a[it][0], b[it][0]):
            np.testing.assert_array_equal(u, v)
    assert any(not np.array_equal(u, v) for u, v in zip(a[0][0], a[1][0]))  # a new draw each iteration
    assert any(not np.array_equal(u, v) for u, v in zip(a[0][0], c[0]))     # another seed, other draws
    assert all(u.shape == x.shape and u.dtype == np.uint8 for u, x in zip(a[0][0], batch))


def test_errors():
    pipe = ladle.Pipeline(batch_size=1, num_threads=1, device_id=None)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        with pytest.raises(Exception, match="policy_name"):
            auto_augment.auto_augment(x, policy_name="imagenet")
        with pytest.raises(Exception, match="no translations.*shape"):
            auto_augment.auto_augment(x, policy_name="reduced_image_net", shape=(10, 10))
        with pytest.raises(Exception, match="max_translate_rel"):
            auto_augment.auto_augment(x, max_translate_rel=0.5)
        with pytest.raises(Exception, match="max_translate_abs"):
            trivial_augment.trivial_augment_wide(x, shape=(4, 4), max_translate_abs=3)
        with pytest.raises(Exception, match="`m`"):
            rand_augment.rand_augment(x, n=2, m=31)
        with pytest.raises(Exception, match="`n`"):
            rand_augment.rand_augment(x, n=-1, m=3)
        with pytest.raises(Exception, match="blur.*excluded"):
            rand_augment.rand_augment(x, n=1, m=3, excluded=["blur"])
        with pytest.raises(Exception, match="shape"):
            auto_augment.apply_auto_augment(auto_augment.get_image_net_policy(use_shape=True), x)
        with pytest.raises(Exception, match="none of the augmentations"):
            trivial_augment.apply_trivial_augment([A.invert], x, fill_value=3)
        with pytest.raises(Exception, match="probability"):
            Policy("p", 11, [[(A.invert, 1.5, None)]])
        with pytest.raises(Exception, match="magnitude bin"):
            Policy("p", 11, [[(A.rotate, 0.5, 11)]])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert rand_augment.rand_augment(x, n=0, m=1) is x
        assert any("n=0" in str(m.message) for m in w)
    pipe.close()


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", [
    lambda x: auto_augment.auto_augment_image_net(x, seed=1),
    lambda x: auto_augment.auto_augment(x, policy_name="reduced_image_net", seed=2),
    lambda x: rand_augment.rand_augment(x, n=2, m=9, seed=3),
    lambda x: trivial_augment.trivial_augment_wide(x, seed=4),
])
def test_gpu_matches_cpu(scheme):
    batch = batch_of(32, 4, size=(48, 40, 3))
    cpu = run(scheme, batch)[0]
    pipe = ladle.Pipeline(batch_size=len(batch), num_threads=2, device_id=0)
    with pipe:
        x = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        pipe.set_outputs(scheme(x.gpu()))
    pipe.feed_input("x", batch)
    (out,) = pipe.run()
    for i, c in enumerate(cpu):
        np.testing.assert_array_equal(np.array(out.as_cpu().at(i)), c)
    pipe.close()


def test_dali_style_script_ports_by_import():
    """A DALI script: @pipeline_def(enable_conditionals=True), image shapes from
    the decoded images' DataNode shape, the schemes chained."""
    from ladle import pipeline_def

    batch = batch_of(8, 5, size=(30, 26, 3))

    @pipeline_def(batch_size=8, num_threads=2, device_id=None, seed=7, enable_conditionals=True)
    def pipe():
        images = fn.external_source(name="x", dtype=types.UINT8, ndim=3, layout="HWC")
        shape = images.shape()[0:2]  # (H, W) per sample, as fn.peek_image_shape gives DALI scripts
        images = trivial_augment.trivial_augment_wide(images, shape=shape, max_translate_rel=0.3)
        if fn.random.coin_flip(probability=0.5):
            images = rand_augment.rand_augment(images, n=1, m=4, shape=shape)
        return auto_augment.auto_augment_image_net(images, shape=shape)

    p = pipe()
    p.build()
    p.feed_input("x", batch)
    (out,) = p.run()
    for i, x in enumerate(batch):
        y = np.array(out.at(i))
        assert y.shape == x.shape and y.dtype == np.uint8
    p.close()
