"""What an artifact computes: the network's forward pass at the predicted positions only.

Inference needs the states of the last `prediction_length` positions. Every layer but the last
runs on all positions, as in training; the last layer computes keys and values for all
positions but queries, feed-forward and everything after only for the predicted ones. This is
the same function as `SequifierNetwork.forward` restricted to those positions (tests check
parity), at roughly half the cost of a two-layer model. ONNX export and PT inference both run
this module, so the two artifact kinds compute the same thing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sequifier.model.attention import SelfAttention, attention_mask
from sequifier.model.layers import TransformerLayer
from sequifier.model.network import SequifierNetwork


def additive_mask(left_pad_lengths: Tensor, length: int, dtype: torch.dtype) -> Tensor:
    """The causal, padding-aware mask as 0 / -inf added to attention scores, built once for all layers."""
    allowed = attention_mask(left_pad_lengths, length)
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(~allowed, float("-inf"))


def _attend_last(attention: SelfAttention, x: Tensor, mask: Tensor, positions: int) -> Tensor:
    """Self-attention output of the last `positions` queries over all keys of `x`."""
    batch, length, _ = x.shape
    q_width = attention.n_heads * attention.head_dim
    kv_width = attention.n_kv_heads * attention.head_dim
    q, k, v = attention.qkv(x).split((q_width, kv_width, kv_width), dim=-1)
    q = q.view(batch, length, attention.n_heads, attention.head_dim).transpose(1, 2)
    k = k.view(batch, length, attention.n_kv_heads, attention.head_dim).transpose(1, 2)
    v = v.view(batch, length, attention.n_kv_heads, attention.head_dim).transpose(1, 2)
    if attention.rotary is not None:
        q, k = attention.rotary(q), attention.rotary(k)
    q = q[:, :, length - positions :]
    if attention.n_kv_heads != attention.n_heads:
        groups = attention.n_heads // attention.n_kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
    dropout = attention.dropout if attention.training else 0.0
    attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, :, length - positions :], dropout_p=dropout)
    return attention.output(attended.transpose(1, 2).reshape(batch, positions, q_width))


def last_layer_at(layer: TransformerLayer, x: Tensor, mask: Tensor, positions: int) -> Tensor:
    """`layer(x, mask)[:, -positions:]`, computed without the other positions' queries and feed-forward."""
    last = x[:, x.shape[1] - positions :]
    if layer.norm_first:
        last = last + layer.dropout(_attend_last(layer.attention, layer.attention_norm(x), mask, positions))
        return last + layer.dropout(layer.feed_forward(layer.feed_forward_norm(last)))
    last = layer.attention_norm(last + layer.dropout(_attend_last(layer.attention, x, mask, positions)))
    return layer.feed_forward_norm(last + layer.dropout(layer.feed_forward(last)))


class InferenceGraph(nn.Module):
    """Positional signature for export: one tensor per input column, then padding lengths.

    Returns one output per target (`generative`) or the final normalized backbone states of
    the predicted positions, [batch, prediction_length, dim_model] (`embedding`).
    """

    def __init__(self, network: SequifierNetwork, interface: str, input_columns: list[str], target_columns: list[str], artifact: str):
        super().__init__()
        self.network = network
        self.interface = interface
        self.input_columns = list(input_columns)
        self.target_columns = list(target_columns)
        self.artifact = artifact
        self.positions = network.interfaces[interface].decoder.prediction_length

    def forward(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        modules = self.network.interfaces[self.interface]
        backbone = self.network.backbone
        x = modules.adapter(modules.ingestion(dict(zip(self.input_columns, tensors[:-1]))))
        mask = additive_mask(tensors[-1], x.shape[1], x.dtype)
        x = backbone.input_dropout(backbone.position(x))
        layers = list(backbone.layers)
        for layer in layers[:-1]:
            x = layer(x, mask)
        states = backbone.final_norm(last_layer_at(layers[-1], x, mask, self.positions))
        if self.artifact == "embedding":
            return (states,)
        outputs = modules.decoder(states)
        return tuple(outputs[t] for t in self.target_columns)
