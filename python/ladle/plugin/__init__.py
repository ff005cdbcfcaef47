"""DALI-compatible plugin modules: ``ladle.plugin.pytorch`` mirrors
``nvidia.dali.plugin.pytorch`` so that a DALI training script moves to ladle
by changing its imports."""
