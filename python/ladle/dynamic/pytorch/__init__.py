"""ladle.dynamic with PyTorch (DALI's ``ndd.pytorch``): ``nodes`` holds
torchdata.nodes nodes (a reader, a mapper, a to-torch node). It needs the
torchdata package; importing ``ladle.dynamic.pytorch.nodes`` without it
raises ImportError naming it."""
