"""Fusion is a property the schemas declare: an operator whose GPU kernel
accepts a per-pixel epilogue, an operator that can be one (pipeline/plan.c
names no operator). The fused results equal the unfused ones: GPU tests in
test_gpu_pipeline.py (test_fused_path_equals_unfused)."""

def test_fusion_is_declared_by_the_schemas():
    """plan.c names no operator: resize and random_resized_crop accept a per-pixel epilogue,
    crop_mirror_normalize is one (the flags Python sees are the C schema's)."""
    from ladle.pipeline import op_schemas
    s = op_schemas()
    assert "accepts_epilogue" in s["resize"]["flags"] and "accepts_epilogue" in s["random_resized_crop"]["flags"]
    assert "epilogue" in s["crop_mirror_normalize"]["flags"]
    assert not any("epilogue" in f for f in s["crop"]["flags"])
