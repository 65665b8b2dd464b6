"""The error of the PyTorch lowering (kept apart so that importing it never imports torch)."""


class TorchLoweringError(Exception):
    """A graph that cannot be lowered: the message names the node and the op."""
