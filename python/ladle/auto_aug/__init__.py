"""ladle.auto_aug: automatic augmentation schemes, as DALI's
nvidia.dali.auto_aug (import change only):

    from ladle import fn, types, pipeline_def
    from ladle.auto_aug import auto_augment, rand_augment, trivial_augment

    @pipeline_def(enable_conditionals=True)   # accepted; ladle does not need it here
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True)
        images = fn.decoders.image(jpegs, device="mixed")
        images = fn.resize(images, size=[224, 224])
        images = auto_augment.auto_augment_image_net(images)    # or
        # images = rand_augment.rand_augment(images, n=2, m=9)
        # images = trivial_augment.trivial_augment_wide(images)
        return images, labels

Modules: auto_augment (the AutoAugment paper's policies, apply_auto_augment),
rand_augment, trivial_augment, augmentations (the suite: shear_x/y,
translate_x/y, rotate, brightness, contrast, color, sharpness, posterize,
solarize, solarize_add, invert, equalize, auto_contrast, identity) and core
(@augmentation, signed_bin, select, Policy). Samples: uint8 HWC images or
FHWC videos, on the CPU or the GPU (every operator used has both:
warp_affine, rotate, transforms.* (CPU, small per-sample matrices),
brightness, saturation, reductions.*, filter, equalize, arithmetic, cast,
_conditional.merge).

How a sample's augmentation is chosen (the decision, and its cost): DALI
splits the batch with conditionals (`if op_idx <= mid:` in its select) and
runs each augmentation on its own samples only. ladle's select joins the
candidates' results with a chain of _conditional.merge over the op index
(what ladle's conditionals make of an `if`), so it works with or without
enable_conditionals, and creates the predicates before the candidates. Its
executor then computes, per sample, only what the sample's merges read
(src/pipeline/demand.h): each candidate's CPU operators run on the samples
that take it; GPU operators run on the whole batch (one launch each) and
keep each sample's own result. The values are those of DALI's scheme either
way, because every random draw is keyed by (operator, sample), not by which
samples an operator saw. Measured with bench/auto_aug_bench.py (CPU
pipeline, 2 worker threads on a 2-core machine shared with other jobs, 64
random 224x224x3 uint8 images, median ms per batch, 2026-12-01; the
machine's load varied between runs by up to 2x):

                             per-sample demand   everything computed
                                                 (LADLE_NO_DEMAND=1)
    trivial_augment_wide          296                 7605
    rand_augment n=2 m=9          600                18407
    auto_augment image_net        424                 9832
    mean of the 14 augmentations alone (DALI's split would cost about
    this per level): 307 and 533 in the same two runs

So on the CPU a scheme costs about one augmentation per level and sample,
as in DALI; without the demand masks (and on the GPU, in device time) it
costs every candidate of every level.

Where ladle differs from DALI: the sharpness filter's parameter stays in
host memory (ladle's filter reads its filter input on the host, also on the
GPU); auto_augment stores bin 0 for the steps without magnitude (DALI -999),
since every candidate looks its parameter up for every sample; contrast and
auto_contrast cast with fn.cast(dtype=UINT8) (the samples are uint8) where
DALI uses fn.cast_like, which ladle does not have.
"""

from . import augmentations, auto_augment, core, rand_augment, trivial_augment

__all__ = ["augmentations", "auto_augment", "core", "rand_augment", "trivial_augment"]
