"""Transformer models in PyTorch, shared by the model tests (export_models.py)
and the benchmark (bench/suites.py, bench/check_suites.py): one definition of
each, so that the model the tests check is the model the benchmark times.

    transformer_encoder(config)    torch.nn.TransformerEncoder of the BERT
                                   kind (post-LN layers, exact GELU)
    explicit_encoder(encoder, ...) the same function in plain ops (the form
                                   Tessel compiles), optionally with BERT's
                                   additive attention mask as a second input
    gpt2_decoder(config)           a GPT-2-style causal decoder: token and
                                   position embeddings, pre-LN blocks with one
                                   QKV projection, tanh GELU, the causal mask
                                   as a Where over a constant triangle, the LM
                                   head tied to the token embedding

CONFIGS names the sizes: the full ones (BERT-base, GPT-2 small: width 768,
12 heads, 12 layers, sequence 128) and the reduced ones the CPU tier runs in
CI (2 layers, width 256, 4 heads: the head dim stays 64, the sequence 128).
Everything is built under the caller's torch.manual_seed.
"""

import math

import torch
import torch.nn.functional as F

BERT = {"layers": 12, "hidden": 768, "heads": 12, "ffn": 3072, "seq": 128}
GPT2 = {"layers": 12, "hidden": 768, "heads": 12, "seq": 128, "vocab": 50257, "positions": 1024}
CONFIGS = {
    "bert": BERT,
    "bert_tiny": dict(BERT, layers=2, hidden=256, heads=4, ffn=1024),
    "gpt2": GPT2,
    # An odd vocabulary, as GPT-2's 50257 is: the LM head's N is no multiple
    # of any tile.
    "gpt2_tiny": dict(GPT2, layers=2, hidden=256, heads=4, vocab=1001, positions=256),
}

# BERT's additive mask value for a masked key (the original implementation's;
# finite, so that it survives f16 storage as a number).
MASKED_SCORE = -10000.0


def transformer_encoder(config=BERT):
    """torch.nn.TransformerEncoder of CONFIG (post-norm layers, exact GELU,
    no dropout, batch first), in eval mode: the models suite's peer."""
    layer = torch.nn.TransformerEncoderLayer(
        d_model=config["hidden"], nhead=config["heads"], dim_feedforward=config["ffn"],
        dropout=0.0, activation="gelu", batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, config["layers"], enable_nested_tensor=False)
    return encoder.eval()


def explicit_encoder(encoder, batch, config=BERT):
    """A module computing ENCODER's function (same weights) in ops that every
    ONNX exporter writes the same way: Q, K and V as three MatMuls, the heads
    split and merged by Reshape/Transpose with constant shapes, attention as
    MatMul, Softmax, MatMul. Tessel compiles this export. Exporting
    nn.TransformerEncoder itself depends on the PyTorch version: 2.x has the
    attention as one scaled_dot_product_attention op (opset 14), whose
    decomposition brings shape arithmetic (Mod, Shape) with it.

    forward(x) or forward(x, mask): mask f32[batch, seq], 1 for a token and 0
    for padding, is added to the scores as BERT does, (1 - mask) * -10000
    broadcast over heads and queries (ENCODER's function with
    src_key_padding_mask, up to the finite mask value)."""

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = encoder

        def forward(self, x, mask=None):
            b, s, e, h = batch, config["seq"], config["hidden"], config["heads"]
            d = e // h

            def heads(t):
                return t.reshape(b, s, h, d).transpose(1, 2)

            additive = None
            if mask is not None:
                additive = ((1.0 - mask) * MASKED_SCORE).reshape(b, 1, 1, s)
            for layer in self.encoder.layers:
                attn = layer.self_attn
                w, bias = attn.in_proj_weight, attn.in_proj_bias
                q, k, v = (F.linear(x, w[i * e:(i + 1) * e], bias[i * e:(i + 1) * e])
                           for i in range(3))
                scores = torch.matmul(heads(q), heads(k).transpose(2, 3)) * (1.0 / math.sqrt(d))
                if additive is not None:
                    scores = scores + additive
                context = torch.matmul(torch.softmax(scores, dim=-1), heads(v))
                x = layer.norm1(x + attn.out_proj(context.transpose(1, 2).reshape(b, s, e)))
                x = layer.norm2(x + layer.linear2(F.gelu(layer.linear1(x))))
            return x

    return Encoder().eval()


def padding_mask(batch, seq):
    """BERT's attention mask for a batch whose last quarter of tokens is
    padding: f32[batch, seq], 1 for a token, 0 for padding."""
    mask = torch.ones(batch, seq)
    mask[:, seq - seq // 4:] = 0.0
    return mask


class _CausalSelfAttention(torch.nn.Module):
    """GPT-2's attention: one QKV projection split in three, scores divided
    by sqrt(head dim), future positions replaced by the dtype's lowest value
    through torch.where over a slice of a constant lower triangle (a buffer,
    as GPT-2 keeps it), softmax, the heads merged and projected."""

    def __init__(self, config):
        super().__init__()
        e, p = config["hidden"], config["positions"]
        self.heads, self.head_dim = config["heads"], e // config["heads"]
        self.qkv = torch.nn.Linear(e, 3 * e)
        self.proj = torch.nn.Linear(e, e)
        causal = torch.tril(torch.ones(p, p, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, p, p))

    def forward(self, x):
        b, s, e = x.shape
        q, k, v = (t.view(b, s, self.heads, self.head_dim).transpose(1, 2)
                   for t in self.qkv(x).split(e, dim=2))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        lowest = torch.full([], torch.finfo(scores.dtype).min, dtype=scores.dtype,
                            device=scores.device)
        scores = torch.where(self.causal[:, :, :s, :s], scores, lowest)
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(context.transpose(1, 2).reshape(b, s, e))


class _DecoderBlock(torch.nn.Module):
    """Pre-LN: x + attn(ln_1(x)), then x + mlp(ln_2(x)) with tanh GELU."""

    def __init__(self, config):
        super().__init__()
        e = config["hidden"]
        self.ln_1 = torch.nn.LayerNorm(e)
        self.attn = _CausalSelfAttention(config)
        self.ln_2 = torch.nn.LayerNorm(e)
        self.fc = torch.nn.Linear(e, 4 * e)
        self.fc_proj = torch.nn.Linear(4 * e, e)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT2Decoder(torch.nn.Module):
    """Token ids int64[batch, seq] -> logits f32[batch, seq, vocab]."""

    def __init__(self, config):
        super().__init__()
        self.wte = torch.nn.Embedding(config["vocab"], config["hidden"])
        self.wpe = torch.nn.Embedding(config["positions"], config["hidden"])
        self.blocks = torch.nn.ModuleList(_DecoderBlock(config) for _ in range(config["layers"]))
        self.ln_f = torch.nn.LayerNorm(config["hidden"])

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], dtype=torch.long, device=ids.device).unsqueeze(0)
        x = self.wte(ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())  # the tied LM head


def gpt2_decoder(config=GPT2):
    """GPT2Decoder of CONFIG in eval mode, weights as GPT-2 initializes them:
    normal(0, 0.02), the residual projections scaled by 1/sqrt(2 * layers),
    biases zero."""
    model = GPT2Decoder(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or name.startswith("ln") or ".ln_" in name:
                continue
            std = 0.02 / math.sqrt(2 * config["layers"]) if "proj.weight" in name else 0.02
            p.normal_(0.0, std)
    return model.eval()
