"""ladle.torch under torch.distributed: 2 and 3 CPU processes with gloo, set up
as torchrun does (RANK, WORLD_SIZE, LOCAL_RANK in the environment). Readers
get no shard arguments, so they shard by the environment. Checks that ranks
run the same number of batches (a collective per batch, as DDP does, would
hang otherwise), that their samples of an epoch are disjoint, and that
together they cover the data set (plus the documented padding).

Run as `python test_distributed.py worker OUT FILES N B` it is one rank."""

import json
import os
import sys

import pytest
from conftest import run_ranks

POLICIES = ("FILL", "DROP", "PARTIAL")
EPOCHS = 2


def _worker(out_dir, files_dir, n, batch):
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    import ladle
    from ladle import fn
    from ladle.torch import GenericIterator, LastBatchPolicy

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=60))
    files = [os.path.join(files_dir, f"{i:02d}.png") for i in range(n)]
    results = {}
    for policy in POLICIES:
        for pad in (True, False):
            pipe = ladle.Pipeline(batch_size=batch, num_threads=1, seed=11)
            with pipe:
                # No shard_id/num_shards: RANK and WORLD_SIZE decide.
                _, labels = fn.readers.file(files=files, labels=list(range(n)), random_shuffle=True,
                                            pad_last_batch=pad, name="Reader")
                pipe.set_outputs(labels)
            it = GenericIterator(pipe, ["label"], reader_name="Reader", auto_reset=True,
                                 last_batch_policy=LastBatchPolicy[policy])
            epochs, lens = [], []
            for _ in range(EPOCHS):
                lens.append(len(it))
                batches = []
                for data in it:
                    batches.append(data[0]["label"].view(-1).tolist())
                    step = torch.ones(1)
                    dist.all_reduce(step)  # every rank must be here: DDP's gradient all-reduce
                    assert step.item() == world
                epochs.append(batches)
            meta = pipe.reader_meta("Reader")
            results[f"{policy}-{int(pad)}"] = {"epochs": epochs, "lens": lens, "shard_id": meta["shard_id"],
                                               "num_shards": meta["number_of_shards"]}
            pipe.close()
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)


@pytest.fixture(scope="module")
def label_files(tmp_path_factory):
    from PIL import Image

    root = tmp_path_factory.mktemp("dist_files")
    for i in range(23):
        Image.new("RGB", (1, 1), (i, 0, 0)).save(str(root / f"{i:02d}.png"))
    return str(root)


def _launch(world, out_dir, files_dir, n, batch):
    codes, logs = run_ranks([os.path.abspath(__file__), "worker", out_dir, files_dir, str(n), str(batch)], world,
                            out_dir, timeout=180)
    for rank, (code, log) in enumerate(zip(codes, logs)):
        assert code == 0, f"rank {rank} failed:\n{log}"
    results = []
    for rank in range(world):
        with open(os.path.join(out_dir, f"rank{rank}.json")) as f:
            results.append(json.load(f))
    return results


@pytest.mark.slow
@pytest.mark.parametrize("world", [2, 3])
def test_ranks_split_every_epoch(tmp_path, label_files, world):
    pytest.importorskip("torch")
    n, batch = 23, 4
    results = _launch(world, str(tmp_path), label_files, n, batch)
    everything = set(range(n))
    for key in results[0]:
        policy, pad = key.split("-")
        pad = pad == "1"
        per_rank = [r[key] for r in results]
        assert [r["shard_id"] for r in per_rank] == list(range(world)), key
        assert all(r["num_shards"] == world for r in per_rank), key
        for e in range(EPOCHS):
            counts = [len(r["epochs"][e]) for r in per_rank]
            assert len(set(counts)) == 1 and counts[0] > 0, (key, e, counts)
            assert all(r["lens"][e] == counts[0] for r in per_rank), (key, e)
            samples = [[x for b in r["epochs"][e] for x in b] for r in per_rank]
            distinct = [set(s) for s in samples]
            if not (policy == "FILL" and not pad):
                # Ranks never share a sample of the epoch (FILL without padding
                # completes its last batch with the next epoch's samples).
                for i in range(world):
                    for j in range(i + 1, world):
                        assert not distinct[i] & distinct[j], (key, e, i, j)
            union = set().union(*distinct)
            if pad and policy in ("FILL", "PARTIAL"):
                assert union == everything, (key, e)
            if pad and policy == "PARTIAL":
                assert sum(len(s) for s in samples) == n, (key, e)  # each sample exactly once
            if pad and policy == "FILL":
                for s in samples:  # the shard, then copies of its last sample
                    first_dup = next((k for k in range(1, len(s)) if s[k] in s[:k]), len(s))
                    assert all(x == s[first_dup - 1] for x in s[first_dup:]), (key, e, s)
            if pad and policy == "DROP":
                assert all(len(s) == len(set(s)) == (n // world) // batch * batch for s in samples), (key, e)
            if not pad and e == 0 and policy in ("FILL", "PARTIAL"):
                assert union >= everything, (key, e)
            if not pad and e == 0 and policy == "PARTIAL":
                assert sum(len(s) for s in samples) == n, (key, e)
    # The shuffle is a different permutation in the next epoch.
    first = [x for b in results[0]["PARTIAL-1"]["epochs"][0] for x in b]
    second = [x for b in results[0]["PARTIAL-1"]["epochs"][1] for x in b]
    assert first != second


if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] == "worker":
    _worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    # As examples/imagenet/train.py: torch 1.13 + gloo can hang in interpreter
    # shutdown; the results are written, so leave without it.
    sys.stdout.flush()
    os._exit(0)
