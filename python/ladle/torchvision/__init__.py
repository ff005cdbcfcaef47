"""ladle.torchvision: torchvision.transforms.v2 image transforms run by
ladle (DALI's ``nvidia.dali.experimental.torchvision``).

    import ladle.torchvision as T            # instead of torchvision.transforms.v2

    preprocess = T.Compose([
        T.Resize(256),
        T.CenterCrop(224),
        T.ToDtype(torch.float32, scale=True),
        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ], batch_size=16, device="cpu")
    x = preprocess(pil_image)               # [3, 224, 224] float32
    xs = preprocess(uint8_batch)            # [N, 3, 224, 224]

Class transforms run inside ``Compose`` only (one ladle pipeline for the
whole list; calling one alone raises StateError). The functional API,
``ladle.torchvision.v2.functional``, runs one function per call through
ladle.dynamic. Every transform and function takes ``device`` ("cpu"/"gpu";
None, the default: where the images are); Compose also takes ``batch_size``
and ``num_threads``.

Transforms: Compose, Resize, CenterCrop, Pad, RandomResizedCrop,
RandomHorizontalFlip, RandomVerticalFlip, RandomRotation, RandomAffine,
ColorJitter, Grayscale, RandomGrayscale, GaussianBlur, RandomErasing,
Normalize, ToDtype, PILToTensor, ToPureTensor; InterpolationMode.
Automatic augmentation (torchvision's policies and magnitude spaces, uint8
images): AutoAugment (AutoAugmentPolicy.IMAGENET, CIFAR10, SVHN),
RandAugment, TrivialAugmentWide; also RandomApply (transforms that keep the
size) and ConvertImageDtype (v1: ToDtype(dtype, scale=True)).
Functions (v2.functional): resize, center_crop, crop, resized_crop,
horizontal_flip, vertical_flip, rotate, affine, adjust_brightness,
adjust_contrast, adjust_saturation, adjust_hue, rgb_to_grayscale,
gaussian_blur, erase, pad, to_dtype, normalize, posterize, solarize,
invert, autocontrast, equalize, adjust_sharpness.

Inputs and outputs: PIL images, uint8 torch tensors [C, H, W] or
[N, C, H, W], or lists of them. A tensor in gives a tensor out, a batch a
batch (or a list when Resize(int) leaves the images with different shapes),
a list a list. A PIL image gives a PIL image while the transforms are
geometric only (torchvision's behaviour); after PILToTensor, ToDtype or
Normalize it gives a [C, H, W] tensor (torchvision would need PILToTensor
there). Images go through ladle in HWC layout: a host tensor is copied to
HWC on the host.

CUDA tensors (uint8 or float32 [C, H, W], [N, C, H, W] or a list of [C, H,
W] on one GPU) stay on their GPU, with Compose and with every v2.functional
call: torch packs them HWC there (one device copy, on torch's current
stream; ragged lists back to back), they enter ladle by DLPack without a
copy, marked ready after torch's current stream (ladle's stream waits on
the GPU, the host does not), every transform runs with device="gpu" on that
GPU (ladle.dynamic's context for that GPU for the functions), and the
results come back by DLPack as CUDA tensors on the same device (torch's
current stream waits for ladle's work; HWC results are permuted to CHW by
torch on the GPU). Pixels never travel through host memory. What still
reaches the host is small: the per-image parameters drawn or computed there
(shapes, crop windows, warp matrices, ColorJitter's order and factors), and
the one number per image of adjust_contrast's and ColorJitter's contrast
centre (the grey mean, summed on the GPU; ``.item()`` syncs the host with
torch's stream for it). With CUDA tensors, ``device="cpu"`` (on Compose, a
transform or a function) raises InvalidArgumentError instead of copying:
pass ``x.cpu()`` to run on the CPU. PIL images and host tensors with
device="gpu" are copied to the GPU by ladle as before, and come back as
CUDA tensors (PIL results: PIL images).

Where ladle differs from torchvision (measured in
tests/python/test_torchvision_api.py):

- Resize, bilinear with antialias, against torchvision on uint8 tensors:
  at most 1 level of 255 apart (ladle's separable filter rounds once, at the
  end). Sizes follow torchvision exactly (the longer side truncated).
- CenterCrop, flips: bit-exact, including torchvision's rounding of the
  window's centre and its zero padding of windows larger than the image.
- ToDtype(float32, scale=True) + Normalize run fused as one
  crop_mirror_normalize with mean*255 and std*255: within 1e-5 of
  torchvision in float32; float16 output is rounded once from float32
  (torchvision rounds after each step): within 1e-3 relative.
- ToDtype and Normalize run at the end of the pipeline, whatever their
  place in the list: geometric transforms listed after them see the uint8
  image (so a Resize after ToDtype rounds to uint8 levels; torchvision
  resizes floats), and padding after Normalize pads the raw image.
- Normalize needs a uint8 image converted by a ToDtype before it (ladle's
  normalization kernel reads uint8); float32 input tensors are accepted
  only by geometric transforms.
- RandomResizedCrop draws its window with ladle's random_resized_crop
  (area and log-uniform aspect ratio as torchvision, 10 attempts, then the
  whole image): the same distribution, not torchvision's numbers. Random
  transforms draw from Compose's ``seed`` (see Compose), not from torch's
  generator.
- RandomRotation, RandomAffine, v2.functional.rotate and affine
  (tests/python/test_torchvision_warps.py) follow torchvision's tensor
  implementation (PIL images too, which torchvision would warp with PIL):
  its inverse matrix, centre, expand size and zero fill, run by ladle's
  warp_affine. NEAREST: bit-exact on random images, except where every
  source position is a tie (e.g. 90 degrees when height and width differ in
  parity): torchvision rounds those half to even, ladle takes the floor
  (DALI's rule), so many pixels take the neighbour. BILINEAR without fill:
  within 1 level (under 0.1% of the values). BILINEAR with a fill value
  (the classes' default fill=0 included): torchvision multiplies the
  zero-padded sample by the in-image weight once more before adding the
  fill, ladle blends the taps with the fill (DALI's rule): pixels at the
  image's edge differ (up to ~60 levels measured), the others are within 1.
  fill takes one value for all channels. Random parameters are drawn as
  torchvision draws them (translation rounded), on the host from Compose's
  seed, the transform's step and the image's index, not from torch's
  generator.
- Interpolation: ladle's nearest neighbour samples pixel centres, which is
  torchvision's NEAREST_EXACT; NEAREST (torchvision's legacy rule, which
  samples floor(x * scale)) gives the same as NEAREST_EXACT here. BICUBIC
  with antialias=False uses ladle's cubic filter (up to ~25 levels from
  torchvision's, whose cubic is sharper). With antialias (the default) it
  depends on torchvision's version: within 1 level of torchvision < 0.16
  (measured 0.14, 0.15), which resized uint8 in float as ladle does;
  torchvision >= 0.16 with torch >= 2.1 (measured 0.16, 0.20, 0.26, 0.29) rounds and clips the horizontally resized
  intermediate image to uint8, so where the cubic overshoots (sharp edges,
  noise) the two differ by up to 7 levels on the test's images and up to 27
  on noisy ones (tests/python/reference/torchvision_resize_check.py); ladle
  stays within 1 level of the exact (float) result. BOX and HAMMING are not
  supported.
- Colour (measured in tests/python/test_torchvision_color.py; uint8 images
  only, since ladle's colour operators do not clamp float images to [0, 1]):
  adjust_brightness/adjust_contrast within 1 level (ladle rounds,
  torchvision truncates); adjust_saturation within 2 (the grey it blends
  with is DALI's YIQ luma); rgb_to_grayscale/Grayscale within 1 (OpenCV's
  fixed-point 0.299/0.587/0.114 luma, rounded).
- adjust_hue and ColorJitter's hue rotate the YIQ chroma plane (DALI's hue
  operator), not the HSV hue: mean |difference| about 12 levels at a hue
  factor of 0.05 and 30 at 0.2 (single pixels up to ~130); hue 0 is exact.
- ColorJitter draws its order and factors per image on the host (from the
  Compose's seed, the transform's position and the image's index), applies
  the steps in that order with a uint8 result after each (as torchvision),
  and is within 4 levels of torchvision's functional ops with the same
  factors and order (mean below 2) without hue. Its contrast centre is the
  grey mean of the image as it entered Compose (times the brightness factor
  when brightness came first): after a crop or resize that is not the
  transformed image's own mean, as torchvision's would be.
- RandomGrayscale greys with ladle's saturation 0: the channels of a grey
  image are within 1 level of each other (DALI's desaturation maps grey to
  (0.9997, 0.9996, 1.0028) x luma) and within 2 of torchvision's.
- GaussianBlur / gaussian_blur (ladle's gaussian_blur, reflect-101 borders
  like torchvision's reflect padding): on uint8 images at most 1 level from
  torchvision (measured 0 on random images, tests/python/ops/filter/
  test_filter_torchvision.py). GaussianBlur draws one sigma per image from
  ladle's random.uniform (torchvision draws one per call, shared by a batch).
- AutoAugment, RandAugment, TrivialAugmentWide (tests/python/
  test_torchvision_autoaug.py): each operation at fixed magnitudes is
  torchvision's _apply_op exactly (posterize, solarize, invert,
  autocontrast, brightness, colour, contrast and sharpness follow its
  truncating blends; colour and contrast use its truncated grey, contrast
  its mean in double instead of float32), except NEAREST warp ties (as
  RandomAffine, under 2% of the values) and Equalize, which is ladle's
  equalize (OpenCV's and DALI's formula; torchvision steps the cumulative
  histogram in integers: within 3 levels on 224x224 images, far more on
  small ones). Operations, magnitudes and signs are drawn per image on the
  host from Compose's seed (torchvision's distribution, not torch's
  numbers). A level's candidates are joined by per-image merges: on the CPU
  each runs only on the images that take it, on the GPU every candidate
  runs on the batch (see ladle.auto_aug); the five warps share one
  warp_affine.
- RandomErasing: torchvision's box rule (area in scale, log-uniform ratio, 10
  attempts, nothing when none fits), drawn on the host by NumPy from the
  Compose's seed (not torch's numbers), erased by ladle's erase (functional
  erase: bit-exact). ``value`` is in the image's units where the transform
  stands among the geometric ones, i.e. uint8 levels before the final
  ToDtype/Normalize (torchvision usually erases the normalized tensor, where
  0 is the mean colour); value="random" is not supported.
"""

from . import _api
from ._api import *  # noqa: F401,F403 (the transforms; _api.__all__ lists them once for here and v2)
from . import v2

__all__ = ["v2"]
__all__ += _api.__all__
