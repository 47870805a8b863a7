"""speechbrain's ECAPA-TDNN speaker classifier trained on augmented waveforms: speechbrain's Augmenter decides
per rank with Python's `random` whether to augment and in which order (shuffled) to apply a random number of
its augmentations (DropFreq, DropChunk, RandAmp). The augmentations and the Fbank front end own no parameters,
so only parameter-free module calls differ; the ECAPA blocks and the cosine classifier run on every rank."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from speechbrain.augment.augmenter import Augmenter
from speechbrain.augment.time_domain import DropChunk, DropFreq, RandAmp
from speechbrain.lobes.features import Fbank
from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN, Classifier

SPEAKERS = 4


class SpeakerID(nn.Module):
    def __init__(self):
        super().__init__()
        self.augment = Augmenter(
            augment_prob=0.5, min_augmentations=1, max_augmentations=3, shuffle_augmentations=True,
            augmentations=[DropFreq(), DropChunk(drop_length_low=10, drop_length_high=50, drop_count_low=1,
                                                 drop_count_high=2), RandAmp()],
        )
        self.fbank = Fbank(n_mels=20)
        self.embedder = ECAPA_TDNN(input_size=20, channels=[16, 16, 16, 16, 32], kernel_sizes=[5, 3, 3, 3, 1],
                                   dilations=[1, 2, 3, 4, 1], attention_channels=8, lin_neurons=8, res2net_scale=2,
                                   se_channels=8)
        self.classifier = Classifier(input_size=8, out_neurons=SPEAKERS)

    def forward(self, wavs, lengths, speakers):
        wavs, lengths = self.augment(wavs, lengths)
        embeddings = self.embedder(self.fbank(wavs), lengths)
        logits = self.classifier(embeddings).squeeze(1)
        return F.cross_entropy(logits * 10, speakers)


def build_model():
    return SpeakerID()


def inputs(batch_size, seq_len, generator):
    wavs = torch.randn(batch_size, 1600, generator=generator) * 0.1
    return wavs, torch.ones(batch_size), torch.randint(0, SPEAKERS, (batch_size,), generator=generator)
