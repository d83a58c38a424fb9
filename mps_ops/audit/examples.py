"""The built-in examples `python -m mps_ops.audit` audits: small versions of
three models Mac users run, each with the example input it needs."""

from __future__ import annotations

import torch
from torch import nn


def transformer_encoder():
    """nn.TransformerEncoder with a padding mask (the second sequence padded)."""
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2)
    tokens = torch.randn(2, 6, 32)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[1, 4:] = True
    return model, (tokens,), {"src_key_padding_mask": padding}


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(16, 10)

    def forward(self, x):
        return nn.functional.log_softmax(self.classifier(self.features(x).flatten(1)), dim=1)


def small_cnn():
    """A CNN with batch norm, max and adaptive average pooling, log_softmax."""
    return SmallCNN(), (torch.randn(4, 3, 16, 16),), {}


def lstm():
    """A two-layer LSTM over a batch of sequences."""
    return nn.LSTM(input_size=8, hidden_size=16, num_layers=2, batch_first=True), (torch.randn(3, 5, 8),), {}


EXAMPLES = {"transformer": transformer_encoder, "cnn": small_cnn, "lstm": lstm}
