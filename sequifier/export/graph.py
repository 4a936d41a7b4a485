"""What an artifact computes: the network's forward pass at the last `prediction_length` positions.

Both artifact kinds (ONNX and PT) run this module, so they compute the same thing. It asks the
network for the predicted positions only (`queries`): every layer but the last runs on all
positions, the last one only where outputs are read, at roughly half the cost of a two-layer model.
"""

from __future__ import annotations

from torch import Tensor, nn

from sequifier.model.network import SequifierNetwork


class InferenceGraph(nn.Module):
    """Positional signature for export: one tensor per input column, then padding lengths.

    Returns one output per target (`generative`) or the final normalized backbone states of
    the predicted positions, [batch, prediction_length, dim_model] (`embedding`).
    """

    def __init__(
        self,
        network: SequifierNetwork,
        interface: str,
        input_columns: list[str],
        target_columns: list[str],
        artifact: str,
    ):
        super().__init__()
        self.network = network
        self.interface = interface
        self.input_columns = list(input_columns)
        self.target_columns = list(target_columns)
        self.artifact = artifact
        self.positions = network.interfaces[interface].decoder.prediction_length

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        inputs, left_pad_lengths = dict(zip(self.input_columns, tensors[:-1])), tensors[-1]
        if self.artifact == "embedding":
            return (self.network.states(self.interface, inputs, left_pad_lengths, self.positions),)
        outputs = self.network(self.interface, inputs, left_pad_lengths, self.positions)
        return tuple(outputs[t] for t in self.target_columns)
