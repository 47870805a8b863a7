"""speechbrain's CRDNN (CNN + LSTM + DNN) acoustic model with a CTC head. Its speechbrain Sequential
containers infer each appended layer's input shape by running the layers built so far on a dummy input
inside the constructor, and speechbrain's LSTM re-initialises its built torch LSTM (`rnn_init`)."""
import speechbrain as sb
import torch
import torch.nn as nn
import torch.nn.functional as F
from speechbrain.lobes.models.CRDNN import CRDNN

FEATURES = 20
TOKENS = 8


class AcousticModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.crdnn = CRDNN(
            input_shape=[None, None, FEATURES], cnn_blocks=1, cnn_channels=[4], cnn_kernelsize=(3, 3),
            inter_layer_pooling_size=[2], rnn_class=sb.nnet.RNN.LSTM, rnn_layers=1, rnn_neurons=8,
            rnn_bidirectional=False, rnn_re_init=True, dnn_blocks=1, dnn_neurons=8, dropout=0.0,
        )
        self.ctc_head = nn.Linear(8, TOKENS)

    def forward(self, features, targets):
        log_probs = F.log_softmax(self.ctc_head(self.crdnn(features)), dim=-1).transpose(0, 1)
        lengths = torch.full((features.shape[0],), log_probs.shape[0], dtype=torch.long)
        target_lengths = torch.full((features.shape[0],), targets.shape[1], dtype=torch.long)
        return F.ctc_loss(log_probs, targets, lengths, target_lengths, blank=0)


def build_model():
    return AcousticModel()


def inputs(batch_size, seq_len, generator):
    features = torch.randn(batch_size, seq_len, FEATURES, generator=generator)
    return features, torch.randint(1, TOKENS, (batch_size, 4), generator=generator)
