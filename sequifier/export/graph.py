"""What an artifact computes: the network's forward pass at the last `prediction_length` positions.

Both artifact kinds (ONNX and PT) run this module, so they compute the same thing. It asks the
network for the states the decoder reads only (`queries`: prediction_length + support - 1 of them,
since each output reads `support` states ending at its position): every layer but the last runs on
all positions, the last one only where outputs are read, at roughly half the cost of a two-layer model.
"""

from __future__ import annotations

from torch import Tensor, nn

from sequifier.model.network import SequifierNetwork


class InferenceGraph(nn.Module):
    """Positional signature for export: one tensor per name of `input_names` (contract.graph_inputs: the input
    columns, then a valid-slot mask per depth layout), then padding lengths.

    Returns one output per target (`generative`) or the final normalized backbone states of
    the predicted positions, [batch, prediction_length, dim_model] (`embedding`).
    """

    def __init__(
        self,
        network: SequifierNetwork,
        interface: str,
        input_names: list[str],
        target_columns: list[str],
        artifact: str,
    ):
        super().__init__()
        self.network = network
        self.interface = interface
        self.input_names = list(input_names)
        self.target_columns = list(target_columns)
        self.artifact = artifact
        decoder = network.interfaces[interface].decoder
        self.positions = decoder.prediction_length
        self.states = decoder.states_needed

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        inputs, left_pad_lengths = dict(zip(self.input_names, tensors[:-1])), tensors[-1]
        if self.artifact == "embedding":
            return (self.network.states(self.interface, inputs, left_pad_lengths, self.positions),)
        outputs = self.network(self.interface, inputs, left_pad_lengths, self.states)
        return tuple(outputs[t] for t in self.target_columns)
