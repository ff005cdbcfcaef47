/* equalize (DALI's fn.equalize, and its old name fn.experimental.equalize):
 * histogram equalization of each channel of each frame of uint8 images and
 * videos (layouts HW, HWC, CHW, FHW, FHWC, FCHW; without a layout, 2-D is HW
 * and 3-D HWC), with equalize_core.h's formula (OpenCV's, as DALI). */
#include <string.h>

#include "ops/color/equalize_core.h"
#include "ops/color/equalize_kernel.h"
#include "ops/op.h"

static const char *const eq_layouts[] = {"HW", "HWC", "CHW", "FHW", "FHWC", "FCHW", NULL};

static ladle_status eq_init(ladle__node *n) {
  const ladle__out_desc *in = &n->in[0];
  if (in->dtype != LADLE_UINT8)
    return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input must be uint8, got %s", ladle_dtype_name(in->dtype));
  n->out[0] = *in;
  if (!in->layout[0]) {
    if (in->ndim != 2 && in->ndim != 3)
      return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT, "input without a layout must be 2-D (HW) or 3-D (HWC), "
                           "got %d-D", in->ndim);
    strcpy(n->out[0].layout, in->ndim == 2 ? "HW" : "HWC");
  }
  for (int k = 0; eq_layouts[k]; k++)
    if (strcmp(n->out[0].layout, eq_layouts[k]) == 0) return LADLE_OK;
  return LADLE_OP_FAIL(n, LADLE_ERROR_INVALID_ARGUMENT,
                       "input layout \"%s\" is not supported (HW, HWC, CHW, FHW, FHWC or FCHW)", n->out[0].layout);
}

static ladle_status eq_setup(ladle__node *n, ladle__sample *s) {
  ladle__set_shape(n, s, 0, ladle__input(n, s, 0).shape);
  return LADLE_OK;
}

static void describe(const ladle__node *n, const ladle__sample *s, ladle__equalize_desc *d) {
  ladle__tensor in = ladle__input(n, s, 0), out = ladle__output(n, s, 0);
  const char *layout = n->out[0].layout;
  int frames_axis = layout[0] == 'F', c_at = (int)(strchr(layout, 'C') ? strchr(layout, 'C') - layout : -1);
  int h_at = (int)(strchr(layout, 'H') - layout);
  int64_t frames = frames_axis ? in.shape[0] : 1, channels = c_at >= 0 ? in.shape[c_at] : 1;
  memset(d, 0, sizeof *d);
  d->in = in.data;
  d->out = out.data;
  d->pixels = in.shape[h_at] * in.shape[h_at + 1];
  d->channels = channels;
  d->hists = frames * channels;
  d->frame_stride = d->pixels * channels;
  int channel_last = c_at == in.ndim - 1;
  d->chan_stride = channel_last ? 1 : d->pixels;
  d->pix_stride = channel_last ? channels : 1;
}

static ladle_status eq_run(ladle__node *n, ladle__sample *s) {
  ladle__equalize_desc d;
  describe(n, s, &d);
  uint32_t hist[256];
  uint8_t lut[256];
  for (int64_t h = 0; h < d.hists; h++) {
    memset(hist, 0, sizeof hist);
    for (int64_t p = 0; p < d.pixels; p++) hist[d.in[ladle__equalize_offset(&d, h, p)]]++;
    ladle__equalize_lut(lut, hist);
    for (int64_t p = 0; p < d.pixels; p++) {
      int64_t at = ladle__equalize_offset(&d, h, p);
      d.out[at] = lut[d.in[at]];
    }
  }
  return LADLE_OK;
}

#ifdef LADLE_HAVE_CUDA
static ladle_status eq_run_batch(ladle__node *n, ladle__gpu *g) {
  int batch = n->config->batch_size, count = 0;
  ladle__equalize_desc *descs = NULL;
  ladle_status st = ladle__scratch(n, &(ladle__sample){.worker = 0}, sizeof *descs * (size_t)batch, (void **)&descs);
  if (st != LADLE_OK) return st;
  int64_t hists = 0;
  for (int i = 0; i < batch; i++) {
    ladle__sample s = {.slot = i};
    describe(n, &s, &descs[count]);
    if (descs[count].hists * descs[count].pixels == 0) continue;
    hists += descs[count++].hists;
  }
  if (!count) return LADLE_OK;
  uint32_t *hist = NULL;
  if ((st = ladle__gpu_device_scratch(g, (sizeof *hist + 1) * 256 * (size_t)hists, (void **)&hist)) != LADLE_OK)
    return st;
  uint8_t *lut = (uint8_t *)(hist + 256 * hists);
  for (int i = 0, at = 0; i < count; i++) {
    descs[i].hist = hist + 256 * at;
    descs[i].lut = lut + 256 * at;
    at += (int)descs[i].hists;
  }
  void *host = NULL, *dev = NULL;
  size_t bytes = ladle__gpu_equalize_param_bytes(count);
  if ((st = ladle__gpu_params(g, bytes, &host, &dev)) != LADLE_OK) return st;
  return ladle__gpu_equalize(descs, count, hist, hists, host, dev, bytes, g->stream);
}
#define EQ_RUN_BATCH eq_run_batch
#else
#define EQ_RUN_BATCH NULL
#endif

const ladle__op_def ladle__op_equalize = {
    .schema = {.name = "equalize",
               .doc = "Histogram equalization of each channel (of each frame) of uint8 images or videos, as "
                      "OpenCV's equalizeHist (DALI's formula).",
               .min_inputs = 1, .max_inputs = 1, .num_outputs = 1, .devices = LADLE_ON_CPU_GPU},
    .init = eq_init,
    .setup = eq_setup,
    .run = eq_run,
    .run_batch = EQ_RUN_BATCH,
};
