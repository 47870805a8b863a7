"""Our small residual network assembled from torchvision.ops blocks (Conv2dNormActivation, SqueezeExcitation,
StochasticDepth, MLP), trained with row-mode stochastic depth p=0.5: StochasticDepth zeroes whole samples of
the residual branch with a per-rank Bernoulli draw, but the branch itself always runs. Every block initialises
only its own parameters in its own constructor."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.ops import MLP, Conv2dNormActivation, SqueezeExcitation, StochasticDepth


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.branch = nn.Sequential(
            Conv2dNormActivation(channels, channels, kernel_size=3),
            SqueezeExcitation(channels, channels // 2),
        )
        self.drop = StochasticDepth(p=0.5, mode="row")

    def forward(self, x):
        return x + self.drop(self.branch(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = Conv2dNormActivation(3, 8, kernel_size=3, stride=2)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.head = MLP(8, [16, 5], dropout=0.1)

    def forward(self, images, labels):
        features = self.blocks(self.stem(images)).mean(dim=(2, 3))
        return F.cross_entropy(self.head(features), labels)


def build_model():
    return Net()


def inputs(batch_size, seq_len, generator):
    return torch.randn(batch_size, 3, 16, 16, generator=generator), torch.randint(0, 5, (batch_size,), generator=generator)
