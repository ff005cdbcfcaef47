/* Per-sample demand: which samples of which operators an iteration needs.
 * A merge (an operator with selects_input, ops/op.h: _conditional.merge, the
 * join of an `if` on a DataNode or ladle.auto_aug's select) reads, for each
 * sample, only the input its predicate picks; once
 * the predicate has been computed, the samples of the other branch that
 * nothing else reads need not be computed. The executor asks before each
 * operator which of its samples to compute; skipped samples get empty
 * outputs (their setup and run are not called). Only CPU operators skip;
 * GPU and mixed operators, readers, callbacks (python_function), views,
 * operators without consumers,
 * operators that read other samples' state (ladle__node.all_samples) and
 * pipeline outputs compute every sample (so everything they read does).
 * Operators that look at the batch's input shapes (pad to the largest
 * extent) see the skipped samples as empty: within a branch, they see the
 * branch's samples, as in DALI.
 * Values are unchanged: every random draw is keyed by (operator, sample).
 * Off without merges in the graph, with operators whose init runs late
 * (after a callback operator), or with LADLE_NO_DEMAND set. Used by the
 * executor threads: each stage (executor.c) has its own masks, `stage` 0
 * (the host stage, or every node with one stage) or 1 (the device stage). */
#ifndef LADLE_PIPELINE_DEMAND_H
#define LADLE_PIPELINE_DEMAND_H

#include "pipeline/pipeline.h"

/* At executor start: allocates the masks when the graph has merges. */
ladle_status ladle__demand_init(ladle_pipeline *p);
void ladle__demand_fini(ladle_pipeline *p);

/* Starts a stage of an iteration of `batch` samples whose value batches are
 * `values` (read for the merges' predicates). */
void ladle__demand_begin(ladle_pipeline *p, int stage, int batch, ladle_batch **values);

/* 1 when node `i` computes every sample of every iteration. */
int ladle__demand_forced(const ladle_pipeline *p, int i);

/* Before node `i` runs in `stage`: NULL when it computes every sample, else
 * one byte per slot (1: compute). Valid until the stage's next call. */
const unsigned char *ladle__demand_mask(ladle_pipeline *p, int stage, int i);

#endif
